package handler

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// ovsPolicy is upstream's ovs-bridge example: eth1 under ovs-br0 with an
// internal interface carrying an address.
const ovsPolicy = `interfaces:
- name: ovs-br0
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: false
    port:
    - name: eth1
    - name: ovs0
- name: ovs0
  type: ovs-interface
  state: up
  ipv4:
    enabled: true
    address:
    - ip: 198.51.100.80
      prefix-length: 24
`

// runHandler runs the whole handler (reporter and policies) for n until
// the test ends.
func runHandler(t *testing.T, n *polNode, tweak func(*Options)) {
	t.Helper()
	t.Cleanup(func() {
		_ = n.c.Delete(context.Background(), &nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n.name}})
	})
	opts := Options{Node: n.name, Config: env.Config, NetNS: n.nsPath, StateDir: n.stateDir,
		Log: testr.NewWithOptions(t, testr.Options{}), Policy: PolicySettings{NoProbes: true}}
	tweak(&opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// The handler with --ovsdb: an OVS policy is Available, the node's OVSDB
// and kernel carry it, and the NodeNetworkState reports the bridge.
func TestRunOVS(t *testing.T) {
	ns := nstest.New(t)
	nstest.Veth(t, ns, "eth1", nstest.New(t), "eth1p")
	o := ovsrun.ForTest(t, ns.Path)
	n := newPolNode(t, "ovs-handler", ns.Path, map[string]string{"ovs-handler": "yes"})
	runHandler(t, n, func(opts *Options) { opts.OVSDB, opts.OVSDatapath = o.Address, "netdev" })
	p := n.createPolicy(t, "ovs-handler", ovsPolicy, map[string]string{"ovs-handler": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "ovs0", "198.51.100.80") {
		t.Error("the ovs0 kernel link lacks 198.51.100.80")
	}
	// The reporter shows the bridge, read from OVSDB.
	n.waitNNS(t, "ovs-br0", func(br *nmstate.Interface) bool {
		return br.OVSBridge != nil && len(br.OVSBridge.Port) == 2
	})
}

// A change made in OVSDB alone reaches the NodeNetworkState through the
// handler's OVSDB monitor: the database server runs without ovs-vswitchd,
// so nothing happens in the kernel, and the resync is an hour away.
func TestRunOVSDBChangeReported(t *testing.T) {
	ns := nstest.New(t)
	o := ovsrun.ForTest(t, "-")
	n := newPolNode(t, "ovs-monitor", ns.Path, nil)
	runHandler(t, n, func(opts *Options) { opts.OVSDB, opts.Resync = o.Address, time.Hour })
	n.waitNNS(t, "lo", func(*nmstate.Interface) bool { return true })
	if out, err := exec.Command("ovs-vsctl", "--db="+o.Address, "--no-wait", "add-br", "br-m").CombinedOutput(); err != nil {
		t.Fatalf("ovs-vsctl: %v: %s", err, out)
	}
	n.waitNNS(t, "br-m", func(br *nmstate.Interface) bool { return br.Type == nmstate.TypeOVSBridge })
}

// waitNNS waits until n's NodeNetworkState shows interface name as ok
// says.
func (n *polNode) waitNNS(t *testing.T, name string, ok func(*nmstate.Interface) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a measurement
	for {
		nns := &nmstatev1beta1.NodeNetworkState{}
		err := n.c.Get(context.Background(), client.ObjectKey{Name: n.name}, nns)
		if err == nil && !nns.Status.CurrentState.IsZero() {
			st, err := nmstate.Decode(nns.Status.CurrentState.Raw)
			if err != nil {
				t.Fatal(err)
			}
			for i := range st.Interfaces {
				if st.Interfaces[i].Name == name && ok(&st.Interfaces[i]) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NodeNetworkState never showed %s as expected (last error %v)", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A handler without an OVS database fails an OVS policy before any change,
// with a message that says there is no OVS database.
func TestRunOVSWithoutOVSDB(t *testing.T) {
	ns := nstest.New(t)
	nstest.Veth(t, ns, "eth1", nstest.New(t), "eth1p")
	n := newPolNode(t, "ovs-none", ns.Path, map[string]string{"ovs-none": "yes"})
	runHandler(t, n, func(*Options) {})
	before := n.show(t)
	p := n.createPolicy(t, "ovs-none", ovsPolicy, map[string]string{"ovs-none": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	c := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing)
	if !strings.Contains(c.Message, "the OVS database is not reachable") || !strings.Contains(c.Message, "no Open vSwitch database is configured") {
		t.Errorf("Failing message %q, want one saying no OVS database is configured", c.Message)
	}
	if got, want := ifaceSummary(n.show(t)), ifaceSummary(before); got != want {
		t.Errorf("the node changed:\nbefore %s\nafter  %s", want, got)
	}
}

func ifaceSummary(s *nmstate.State) string {
	var l []string
	for _, i := range s.Interfaces {
		ctrl := ""
		if i.Controller != nil {
			ctrl = *i.Controller
		}
		l = append(l, i.Name+"/"+string(i.Type)+"/"+ctrl)
	}
	return strings.Join(l, " ")
}
