package nmstate_test

import (
	"strings"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// mtVethLab is the lab node as the kernel backend reports it: eth1 and
// eth2 are veths whose peers live in the switch namespace (reported by
// name, absent from this state).
func mtVethLab(extra ...nmstate.Interface) *nmstate.State {
	return st.State(
		st.Interfaces(
			st.Veth("eth1", "eth1.ep", st.MTU(1500), st.MAC("02:00:00:00:00:01"), st.IPv4("192.0.2.251/24"), st.IPv6("2001:db8:1::1/64")),
			st.Veth("eth2", "eth2.ep", st.MTU(1500), st.MAC("02:00:00:00:00:02"), st.IPv4Disabled(), st.IPv6Disabled()),
		),
		st.Interfaces(extra...),
		st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.1", st.Metric(101), st.Table(254))),
	)
}

// mtPlanLines is the plan of m as text lines.
func mtPlanLines(t *testing.T, m *nmstate.Merged) []string {
	t.Helper()
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		t.Fatalf("PlanChanges: %v", err)
	}
	out := []string{}
	for _, op := range p.Ops {
		out = append(out, op.String())
	}
	return out
}

// mtNoLinkRecreate fails when the plan deletes or creates the link name.
func mtNoLinkRecreate(t *testing.T, m *nmstate.Merged, name string) {
	t.Helper()
	for _, l := range mtPlanLines(t, m) {
		if strings.HasPrefix(l, "link delete "+name+" ") || strings.HasPrefix(l, "link add "+name+" ") {
			t.Errorf("plan deletes or creates %s: %q", name, l)
		}
	}
}

// TestMergeVethIsEthernet covers nmstate's unification of veth into
// ethernet: a veth is configured as an ethernet, `down` deactivates it,
// only `absent` deletes the pair.
func TestMergeVethIsEthernet(t *testing.T) {
	mtRunMergeCases(t, []mtMergeCase{{
		name:    "ethernet over a current veth is modified in place",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))),
		check: func(t *testing.T, m *nmstate.Merged) {
			e := m.Interface("eth1", "")
			mtDiff(t, "change set", []string{"eth1:up"}, mtNames(m.Interfaces))
			mtDiff(t, "type", nmstate.TypeVeth, e.Type)
			mtDiff(t, "veth section kept", &nmstate.Veth{Peer: "eth1.ep"}, e.Veth)
			mtDiff(t, "mtu", st.Ptr(uint64(9000)), e.MTU)
			mtDiff(t, "plan", []string{"link set eth1 type veth mtu 9000"}, mtPlanLines(t, m))
		},
	}, {
		name:    "veth over a current veth is modified in place",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.Iface("eth2", nmstate.TypeVeth, st.MTU(1400)))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"eth2:up"}, mtNames(m.Interfaces))
			mtDiff(t, "type", nmstate.TypeVeth, m.Interface("eth2", "").Type)
			mtNoLinkRecreate(t, m, "eth2")
		},
	}, {
		name:    "veth over a reported ethernet is modified in place",
		desired: st.State(st.Interfaces(st.Iface("eth2", nmstate.TypeVeth, st.MTU(1400)))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "type", nmstate.TypeEthernet, m.Interface("eth2", "").Type)
			mtNoLinkRecreate(t, m, "eth2")
		},
	}, {
		name:    "ethernet already matching a current veth changes nothing",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.IPv4("192.0.2.251/24")))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
		},
	}, {
		name:    "ethernet absent over a current veth deletes the pair",
		current: mtLabState(st.Veth("v0", "v0p"), st.Veth("v0p", "v0")),
		desired: st.State(st.Interfaces(st.Ethernet("v0", st.Absent()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"v0:absent", "v0p:absent"}, mtNames(m.Interfaces))
			mtDiff(t, "type", nmstate.TypeVeth, m.Interface("v0", "").Type)
			mtDiff(t, "plan", []string{"link delete v0 type veth"}, mtPlanLines(t, m))
		},
	}, {
		name:    "veth down deactivates without deleting",
		current: mtLabState(st.Veth("v0", "v0p", st.MTU(1500)), st.Veth("v0p", "v0", st.MTU(1500))),
		desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"v0:down"}, mtNames(m.Interfaces))
			mtDiff(t, "configuration kept", st.Ptr(uint64(1500)), m.Interface("v0", "").MTU)
			mtDiff(t, "plan", []string{"link set v0 down"}, mtPlanLines(t, m))
		},
	}, {
		name:    "ethernet down over a current veth deactivates",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.Ethernet("eth2", st.Down()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			e := m.Interface("eth2", "")
			mtDiff(t, "entry", "eth2 veth down", e.Name+" "+string(e.Type)+" "+string(e.State))
			mtDiff(t, "plan", []string{"link set eth2 down"}, mtPlanLines(t, m))
		},
	}, {
		name:    "veth down that does not exist changes nothing",
		desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
		},
	}, {
		name:    "other virtual interfaces are still deleted by down",
		current: mtVethLab(st.Dummy("d0")),
		desired: st.State(st.Interfaces(st.Dummy("d0", st.Down()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "plan", []string{"link delete d0 type dummy"}, mtPlanLines(t, m))
		},
	}})
}

// TestMergeTargetStateNotInherited covers the rule that the target state
// is the desired one (default up), never the current one: interfaces
// pulled into the change set are activated with their controller.
func TestMergeTargetStateNotInherited(t *testing.T) {
	mtRunMergeCases(t, []mtMergeCase{{
		name:    "admin-down veth attached to a new bridge comes up",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth2")))),
		check: func(t *testing.T, m *nmstate.Merged) {
			e := m.Interface("eth2", "")
			mtDiff(t, "eth2", "veth up br0", string(e.Type)+" "+string(e.State)+" "+mtCtrlOf(e))
			mtNoLinkRecreate(t, m, "eth2")
		},
	}, {
		name: "admin-down current port attached comes up",
		current: mtVethLab(st.Veth("eth3", "eth3.ep", st.Down(), st.IPv4Disabled(), st.IPv6Disabled()),
			st.Bond("bond0", st.Mode("active-backup"), st.Ports())),
		desired: st.State(st.Interfaces(st.Bond("bond0", st.Ports("eth3")))),
		check: func(t *testing.T, m *nmstate.Merged) {
			e := m.Interface("eth3", "")
			mtDiff(t, "eth3", "up bond0", string(e.State)+" "+mtCtrlOf(e))
		},
	}, {
		name: "admin-down detached port comes up",
		current: mtVethLab(st.LinuxBridge("br0", st.Ports("eth3")),
			mtPort("br0", st.Veth("eth3", "eth3.ep", st.Down()))),
		desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			e := m.Interface("eth3", "")
			mtDiff(t, "eth3", "up ", string(e.State)+" "+mtCtrlOf(e))
		},
	}, {
		name: "pulled-in interface whose only change would be its state stays out",
		current: mtVethLab(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")),
			mtPort("bond0", st.Veth("eth3", "eth3.ep", st.Down()))),
		desired: st.State(st.Interfaces(st.Bond("bond0", st.Ports("eth3"), st.MTU(9000)))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"bond0:up"}, mtNames(m.Interfaces))
		},
	}, {
		name:    "desired interface without state is up",
		current: mtVethLab(),
		desired: st.State(st.Interfaces(st.Ethernet("eth2", st.StateOf(""), st.MTU(1400)))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"eth2:up"}, mtNames(m.Interfaces))
		},
	}})
}

// mtDownVethLab is mtVethLab with eth2 administratively down.
func mtDownVethLab() *nmstate.State {
	s := mtVethLab()
	s.Interfaces[1].State = nmstate.StateDown
	return s
}

// TestRevertAdminDownVeth: reverting an apply that brought an admin-down
// veth up (as a port) sets it down again and never deletes it.
func TestRevertAdminDownVeth(t *testing.T) {
	before := mtDownVethLab()
	desired := st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth2"))))
	rev, err := nmstate.Revert(before, desired)
	if err != nil {
		t.Fatal(err)
	}
	var eth2 *nmstate.Interface
	for i := range rev.Interfaces {
		if rev.Interfaces[i].Name == "eth2" {
			eth2 = &rev.Interfaces[i]
		}
	}
	if eth2 == nil {
		t.Fatalf("revert does not mention eth2: %+v", mtNames(rev.Interfaces))
	}
	mtDiff(t, "revert eth2", "veth down ", string(eth2.Type)+" "+string(eth2.State)+" "+mtCtrlOf(eth2))

	m, err := nmstate.Merge(desired, before)
	if err != nil {
		t.Fatal(err)
	}
	after := nmstate.Simulate(before, m)
	back, err := nmstate.Merge(rev, after)
	if err != nil {
		t.Fatal(err)
	}
	e := back.Interface("eth2", "")
	mtDiff(t, "eth2 target", "veth down ", string(e.Type)+" "+string(e.State)+" "+mtCtrlOf(e))
	lines := mtPlanLines(t, back)
	for _, l := range lines {
		if strings.Contains(l, "eth2") && (strings.HasPrefix(l, "link delete") || strings.HasPrefix(l, "link add")) {
			t.Errorf("revert plan re-creates eth2: %q", l)
		}
	}
	if !mtContains(lines, "link set eth2 down") {
		t.Errorf("revert plan does not set eth2 down:\n%s", strings.Join(lines, "\n"))
	}
	restored := nmstate.Simulate(after, back)
	mtDiff(t, "restored", mtCanonical(t, before), mtCanonical(t, restored))
}

func mtContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestSimulateVeth: the model agrees with the merge on veths.
func TestSimulateVeth(t *testing.T) {
	for _, tc := range []struct {
		name             string
		current, desired *nmstate.State
		want             *nmstate.State
	}{
		{
			name:    "veth down stays, down",
			current: st.State(st.Interfaces(st.Veth("v0", "v0p"), st.Veth("v0p", "v0"))),
			desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()))),
			want:    st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()), st.Veth("v0p", "v0"))),
		},
		{
			name:    "ethernet over a veth keeps the veth",
			current: st.State(st.Interfaces(st.Veth("eth1", "eth1.ep", st.MTU(1500)))),
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))),
			want:    st.State(st.Interfaces(st.Veth("eth1", "eth1.ep", st.MTU(9000)))),
		},
		{
			name:    "a current veth's peer elsewhere is not invented",
			current: st.State(st.Interfaces(st.Veth("eth1", "eth1.ep"))),
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1")))),
			want: st.State(st.Interfaces(
				st.Veth("eth1", "eth1.ep", st.Controller("br0"), st.IPv4Disabled(), st.IPv6Disabled()),
				st.LinuxBridge("br0", st.Ports("eth1")),
			)),
		},
		{
			name:    "veth peer change replaces the old peer",
			current: st.State(st.Interfaces(st.Veth("v0", "a"), st.Veth("a", "v0"))),
			desired: st.State(st.Interfaces(st.Veth("v0", "b"))),
			want:    st.State(st.Interfaces(st.Veth("v0", "b"), st.Veth("b", "v0"))),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := nmstate.Merge(tc.desired, tc.current)
			if err != nil {
				t.Fatal(err)
			}
			mtDiff(t, "simulated state", tc.want, nmstate.Simulate(tc.current, m))
		})
	}
}

// TestVerifyVethAsEthernet: verification agrees with the merge and the
// model on veths.
func TestVerifyVethAsEthernet(t *testing.T) {
	for _, tc := range []struct {
		name             string
		desired, current *nmstate.State
		wantErr          string // substring; "" = verifies
	}{
		{
			name:    "desired ethernet verified against a current veth",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
			current: st.State(st.Interfaces(st.Veth("eth1", "eth1.ep", st.MTU(1500)))),
		},
		{
			name:    "desired ethernet mismatch against a current veth fails",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))),
			current: st.State(st.Interfaces(st.Veth("eth1", "eth1.ep", st.MTU(1500)))),
			wantErr: "mtu",
		},
		{
			name:    "desired veth verified against a reported ethernet",
			desired: st.State(st.Interfaces(st.Iface("eth1", nmstate.TypeVeth, st.MTU(1500)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
		},
		{
			name:    "veth down that still exists verifies",
			desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()))),
			current: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Down()), st.Veth("v0p", "v0"))),
		},
		{
			name:    "veth absent that still exists fails",
			desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Absent()))),
			current: st.State(st.Interfaces(st.Veth("v0", "v0p"), st.Veth("v0p", "v0"))),
			wantErr: "absent interface v0 still found",
		},
		{
			name:    "dummy down that still exists fails",
			desired: st.State(st.Interfaces(st.Dummy("d0", st.Down()))),
			current: st.State(st.Interfaces(st.Dummy("d0", st.Down()))),
			wantErr: "down interface d0 still found",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nmstate.Verify(tc.desired, tc.current)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Verify: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Verify error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
