// The Open vSwitch scenarios need ovsdb-server and ovs-vswitchd (Debian's
// openvswitch-switch): on the host with the userspace datapath, in the
// qemu lane (whose initramfs carries them) with the kernel datapath
// (ovsDatapath).

package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestOVSExamples runs the Scenarios that need Open vSwitch, each on a
// node with its own OVS, on ovsDatapath.
func TestOVSExamples(t *testing.T) {
	runLane(t, HostLane, true, newOVSNode)
}

// newOVSNode is newNode with a private Open vSwitch: ovsdb-server in a
// temp dir and ovs-vswitchd inside the node's namespace (ovsDatapath),
// reached through the OVS backend on top of the kernel one.
// After each step ovs-vsctl, a reader independent of ours, checks OVSDB.
func newOVSNode(t *testing.T) *node {
	t.Helper()
	n := newNode(t)
	o := ovsrun.ForTest(t, n.ns.Path)
	b := ovs.Open(context.Background(), n.kernel, ovs.Options{Address: o.Address, DefaultDatapath: ovsDatapath})
	t.Cleanup(func() { b.Close() })
	if err := b.Connected(); err != nil {
		t.Fatal(err)
	}
	n.backend, n.ovsdb = b, o.Address
	n.checkMore = func(desired *nmstate.State) error {
		return errors.Join(checkOVS(o.Address, desired), n.checkDatapath(desired))
	}
	return n
}

// checkDatapath: on the kernel datapath, a node with an OVS bridge up
// has the kernel's datapath link (ovs-system, kind openvswitch).
func (n *node) checkDatapath(desired *nmstate.State) error {
	if ovsDatapath != "" {
		return nil
	}
	for _, ifc := range desired.Interfaces {
		if ifc.Type == nmstate.TypeOVSBridge && ifc.State != nmstate.StateAbsent {
			l, err := n.ns.Netlink.LinkByName("ovs-system")
			if err != nil {
				return fmt.Errorf("kernel datapath: no ovs-system link: %w", err)
			}
			if l.Type() != "openvswitch" {
				return fmt.Errorf("kernel datapath: ovs-system is a %s link, want openvswitch", l.Type())
			}
			return nil
		}
	}
	return nil
}

// vsctl runs ovs-vsctl against the OVS database at addr.
func vsctl(addr string, args ...string) (string, error) {
	out, err := exec.Command("ovs-vsctl", append([]string{"--db=" + addr, "--timeout=10"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ovs-vsctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// lines splits ovs-vsctl's one-name-per-line output, sorted.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// checkOVS reads OVSDB with ovs-vsctl, not through the backend, so a
// reading bug that mirrors a writing bug cannot hide: every up ovs-bridge
// exists with exactly the desired ports (bond members as its interfaces),
// STP as asked, the bonds' modes and the ports' VLANs; every absent one is
// gone; ovs-interfaces are internal ports or patches to their peer.
func checkOVS(addr string, desired *nmstate.State) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	get := func(args ...string) string {
		out, err := vsctl(addr, args...)
		if err != nil {
			errs = append(errs, err)
		}
		return out
	}
	bridges := lines(get("list-br"))
	for _, br := range bridges {
		if dp := get("get", "Bridge", br, "datapath_type"); dp != ovsDatapathShown {
			bad("%s: datapath_type %s, want %s", br, dp, ovsDatapathShown)
		}
	}
	for _, ifc := range desired.Interfaces {
		isBridge := ifc.Type == nmstate.TypeOVSBridge || ifc.Type == "" && slices.Contains(bridges, ifc.Name)
		if !isBridge {
			continue
		}
		if ifc.State == nmstate.StateAbsent {
			if slices.Contains(bridges, ifc.Name) {
				bad("%s: bridge still in OVSDB", ifc.Name)
			}
			continue
		}
		if !slices.Contains(bridges, ifc.Name) {
			bad("%s: bridge not in OVSDB (bridges %v)", ifc.Name, bridges)
			continue
		}
		br := ifc.OVSBridge
		if br == nil {
			continue
		}
		var wantPorts, wantIfaces []string
		for _, p := range br.Port {
			wantPorts = append(wantPorts, p.Name)
			if la := p.LinkAggregation; la != nil {
				for _, m := range la.Port {
					wantIfaces = append(wantIfaces, m.Name)
				}
				if la.Mode != nil {
					if got := get("get", "Port", p.Name, "bond_mode"); got != string(*la.Mode) {
						bad("%s: bond_mode %s, want %s", p.Name, got, *la.Mode)
					}
				}
			} else {
				wantIfaces = append(wantIfaces, p.Name)
			}
			if v := p.VLAN; v != nil {
				errs = append(errs, checkOVSVLAN(get, p.Name, v))
			}
		}
		sort.Strings(wantPorts)
		sort.Strings(wantIfaces)
		if diff := cmp.Diff(wantPorts, lines(get("list-ports", ifc.Name))); diff != "" {
			bad("%s: ports (-want +ovs-vsctl):\n%s", ifc.Name, diff)
		}
		if diff := cmp.Diff(wantIfaces, lines(get("list-ifaces", ifc.Name))); diff != "" {
			bad("%s: interfaces (-want +ovs-vsctl):\n%s", ifc.Name, diff)
		}
		if o := br.Options; o != nil && o.STP != nil && o.STP.Enabled != nil {
			if got, want := get("get", "Bridge", ifc.Name, "stp_enable"), fmt.Sprint(*o.STP.Enabled); got != want {
				bad("%s: stp_enable %s, want %s", ifc.Name, got, want)
			}
		}
	}
	for _, ifc := range desired.Interfaces {
		if ifc.Type != nmstate.TypeOVSInterface || ifc.State == nmstate.StateAbsent {
			continue
		}
		typ := get("get", "Interface", ifc.Name, "type")
		switch {
		case ifc.Patch != nil:
			if typ != "patch" {
				bad("%s: interface type %s, want patch", ifc.Name, typ)
			}
			if got := get("get", "Interface", ifc.Name, "options:peer"); strings.Trim(got, `"`) != ifc.Patch.Peer {
				bad("%s: patch peer %s, want %s", ifc.Name, got, ifc.Patch.Peer)
			}
		case typ != "internal":
			bad("%s: interface type %q, want internal", ifc.Name, typ)
		}
	}
	return errors.Join(errs...)
}

// checkOVSVLAN compares a port's tag, vlan_mode and trunks with the
// desired access or trunk configuration.
func checkOVSVLAN(get func(...string) string, port string, v *nmstate.BridgeVLAN) error {
	var want struct{ mode, tag, trunks string }
	want.mode, want.tag, want.trunks = "[]", "[]", "[]"
	if v.Mode != nil {
		want.mode = string(*v.Mode)
	}
	if v.Tag != nil {
		want.tag = fmt.Sprint(*v.Tag)
	}
	var trunks []string
	for _, tt := range v.TrunkTags {
		if tt.ID != nil {
			trunks = append(trunks, fmt.Sprint(*tt.ID))
		}
		if r := tt.IDRange; r != nil {
			for vid := r.Min; vid <= r.Max; vid++ {
				trunks = append(trunks, fmt.Sprint(vid))
			}
		}
	}
	if trunks != nil {
		want.trunks = "[" + strings.Join(trunks, ", ") + "]"
	}
	got := [3]string{get("get", "Port", port, "vlan_mode"), get("get", "Port", port, "tag"), get("get", "Port", port, "trunks")}
	if w := [3]string{want.mode, want.tag, want.trunks}; got != w {
		return fmt.Errorf("%s: vlan_mode, tag, trunks %q, want %q", port, got, w)
	}
	return nil
}

// TestCheckOVSSeesWhatIsMissing proves the ovs-vsctl check can fail:
// against an OVS where nothing was applied it reports the missing bridges
// and interfaces (and, on the kernel datapath, the missing datapath link).
func TestCheckOVSSeesWhatIsMissing(t *testing.T) {
	n := newOVSNode(t)
	for file, want := range map[string][]string{
		"ovsbridge_create.yml":       {"ovs-br0: bridge not in OVSDB (bridges [])", `ovs-vsctl get Interface ovs0 type: exit status 1: ovs-vsctl: no row "ovs0" in table Interface`},
		"ovsbridge_delete.yml":       nil,
		"ovsbridge_bond_create.yml":  {"ovs-br0: bridge not in OVSDB (bridges [])"},
		"ovsbridge_patch_delete.yml": nil,
	} {
		desired, err := nmstate.Decode(readExample(t, file))
		if err != nil {
			t.Fatal(err)
		}
		if ovsDatapath == "" && len(want) > 0 {
			want = append(want, "kernel datapath: no ovs-system link: Link not found")
		}
		var got []string
		if err := n.checkMore(desired); err != nil {
			got = strings.Split(err.Error(), "\n")
		}
		// The lone "interface type" complaint follows the failed get.
		got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, `ovs0: interface type ""`) })
		sort.Strings(got)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
}

// TestOVSDPDKRefused: the DPDK example is refused before any change, with
// an error naming DPDK, and OVSDB stays empty.
func TestOVSDPDKRefused(t *testing.T) {
	n := newOVSNode(t)
	desired, err := nmstate.Decode(readExample(t, "ovsbridge_dpdk_create.yml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = apply.Apply(context.Background(), n.backend, desired, n.options())
	if err == nil || !strings.Contains(err.Error(), "DPDK") {
		t.Fatalf("apply of ovsbridge_dpdk_create.yml: err = %v, want a refusal naming DPDK", err)
	}
	t.Logf("refused: %v", err)
	var f *apply.Failure
	if errors.As(err, &f) {
		t.Errorf("refused only after a change (a rollback was needed): %v", err)
	}
	if got := lines(mustVsctl(t, n, "list-br")); len(got) != 0 {
		t.Errorf("bridges after the refusal: %v", got)
	}
}

func mustVsctl(t *testing.T, n *node, args ...string) string {
	t.Helper()
	out, err := vsctl(n.ovsdb, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
