package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// stepTimeout bounds one apply (with its verification retries); the qemu
// lane runs under TCG, hence the margin.
const stepTimeout = 2 * time.Minute

// node is a fresh namespace with the NICs the examples refer to (eth1 and
// eth2: veths whose other ends live in a peer namespace, as upstream's
// test bed has them), a private resolv.conf and a private UTS namespace,
// reached through the real kernel backend.
type node struct {
	ns       *nstest.NS
	peer     *nstest.NS
	kernel   *kernel.Backend
	backend  apply.Backend
	stateDir string
	resolv   string
	uts      string
	// devices are the NICs that are not veths (kernel kind "device").
	devices map[string]bool
	// checkMore, when set, is a further independent look at the node
	// after each step (the OVS scenarios' ovs-vsctl check).
	checkMore func(*nmstate.State) error
	// ovsdb is the node's OVS database socket ("" = no OVS).
	ovsdb string
	// nmBus is the bus of the node's NetworkManager ("" on kernel nodes):
	// applyStep then also checks that NetworkManager holds each
	// interface that is up.
	nmBus        string
	nmKeyfileDir string
}

func newNode(t *testing.T) *node {
	t.Helper()
	return newNodeWith(t, "")
}

// newNodeWith is newNode whose eth1 is a NIC of the given kind instead of
// a veth: "netdevsim" is a simulated NIC with SR-IOV virtual functions
// (the qemu lane's netdevsim module, see netdevsim_linux_test.go).
func newNodeWith(t *testing.T, nic string) *node {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	devices := map[string]bool{}
	switch nic {
	case "":
		nstest.Veth(t, ns, "eth1", peer, "sw-eth1")
	case NICNetdevsim:
		netdevsimNIC(t, ns, "eth1")
		devices["eth1"] = true
	default:
		t.Fatalf("unknown NIC kind %q", nic)
	}
	nstest.Veth(t, ns, "eth2", peer, "sw-eth2")
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	uts := newUTSNS(t)
	b, err := kernel.Open(context.Background(), kernel.Options{NetNS: ns.Path, ResolvConf: resolv, UTSNS: uts, SupplicantDir: filepath.Join(dir, "supplicant"), HostnameFile: filepath.Join(dir, "hostname")})
	if err != nil {
		t.Fatalf("opening the kernel backend: %v", err)
	}
	t.Cleanup(func() {
		if err := b.StopSupplicants(); err != nil {
			t.Errorf("stopping the node's wpa_supplicants: %v", err)
		}
		b.Close()
	})
	return &node{ns: ns, peer: peer, kernel: b, backend: b, stateDir: filepath.Join(dir, "state"), resolv: resolv, uts: uts, devices: devices}
}

// newUTSNS creates a private UTS namespace and returns a path that opens
// it, so hostname examples never reach the machine's hostname. Only the
// returned descriptor keeps the namespace alive (closed by t.Cleanup).
func newUTSNS(t *testing.T) string {
	t.Helper()
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, back, err := unshareUTS()
		if back {
			runtime.UnlockOSThread()
		} // else the thread stays locked and the runtime discards it
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("creating a UTS namespace: %v", r.err)
	}
	t.Cleanup(func() { unix.Close(r.fd) })
	return fmt.Sprintf("/proc/self/fd/%d", r.fd)
}

// unshareUTS runs on a locked thread: it moves the thread into a new UTS
// namespace, opens it, and switches the thread back. back reports whether
// the thread is in its original namespace again. It refuses a namespace
// that is the original one, since a hostname example would then rename the
// machine.
func unshareUTS() (fd int, back bool, err error) {
	self := fmt.Sprintf("/proc/self/task/%d/ns/uts", unix.Gettid())
	orig, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, true, fmt.Errorf("opening the thread's uts namespace: %w", err)
	}
	defer unix.Close(orig)
	if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
		return -1, true, fmt.Errorf("unshare uts: %w", err)
	}
	fd, err = unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	back = unix.Setns(orig, unix.CLONE_NEWUTS) == nil
	if err != nil {
		return -1, back, fmt.Errorf("opening the new uts namespace: %w", err)
	}
	var o, n unix.Stat_t
	if err := unix.Fstat(orig, &o); err != nil {
		unix.Close(fd)
		return -1, back, err
	}
	if err := unix.Fstat(fd, &n); err != nil {
		unix.Close(fd)
		return -1, back, err
	}
	if o.Ino == n.Ino && o.Dev == n.Dev {
		unix.Close(fd)
		return -1, back, fmt.Errorf("the new uts namespace is the original one; refusing to continue")
	}
	return fd, back, nil
}

func (n *node) options() apply.Options {
	return apply.Options{StateDir: n.stateDir, VerifyInterval: 200 * time.Millisecond, NetNS: n.ns.Path}
}

// applyStep applies one desired state and checks the outcome four ways:
// Apply itself succeeds (it verifies internally), an independent Verify of
// the desired state against a fresh Show passes, a direct netlink look
// (checkKernel) finds the links, addresses and routes, and planning the same
// desired state again against that Show gives an empty plan. It returns
// what went wrong, so a scenario with a known engine issue can expect it.
func (n *node) applyStep(ctx context.Context, t *testing.T, what string, desired *nmstate.State) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	res, err := apply.Apply(ctx, n.backend, desired.Clone(), n.options())
	if err != nil {
		return fmt.Errorf("apply %s: %w", what, err)
	}
	t.Logf("%s: plan executed:\n%s", what, res.Plan)
	cur, err := n.backend.Show(ctx)
	if err != nil {
		return fmt.Errorf("show after %s: %w", what, err)
	}
	var errs []error
	if err := nmstate.Verify(desired, cur); err != nil {
		errs = append(errs, fmt.Errorf("verify %s after apply:\n%w", what, err))
	}
	if err := n.checkKernel(desired); err != nil {
		errs = append(errs, fmt.Errorf("%s: netlink shows:\n%w", what, err))
	}
	if n.checkMore != nil {
		if err := n.checkMore(desired); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	if n.nmBus != "" {
		if err := n.checkNM(ctx, desired); err != nil {
			errs = append(errs, fmt.Errorf("%s: NetworkManager shows:\n%w", what, err))
		}
	}
	m, err := nmstate.Merge(desired.Clone(), cur)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s: merge against the re-read state: %w", what, err))...)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s: plan against the re-read state: %w", what, err))...)
	}
	if !p.Empty() {
		errs = append(errs, fmt.Errorf("%s: fixed point broken, planning again gives:\n%s", what, p))
	}
	return errors.Join(errs...)
}

// runSteps applies each desired state in order in n and stops at the
// first step that goes wrong (later steps build on it).
func runSteps(ctx context.Context, t *testing.T, n *node, names []string, states []*nmstate.State) error {
	for i, d := range states {
		if err := n.applyStep(ctx, t, names[i], d); err != nil {
			return err
		}
	}
	return nil
}

// runScenario applies each step file of s in order in a fresh node. A
// scenario with a known engine issue must still fail, so the table is
// corrected (and the support matrix regenerated) once it is fixed.
func runScenario(t *testing.T, s Scenario) {
	runScenarioOn(t, s, newNode)
}

// runScenarioOn is runScenario on a node made by newNode (by newNodeWith
// when the scenario names a NIC).
func runScenarioOn(t *testing.T, s Scenario, newNode func(*testing.T) *node) {
	var states []*nmstate.State
	for _, f := range s.Steps {
		desired, err := nmstate.Decode(readExample(t, f))
		if err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		states = append(states, desired)
	}
	if s.NIC != "" {
		// Only the kernel backend's node has NICs other than veths.
		newNode = func(t *testing.T) *node { return newNodeWith(t, s.NIC) }
	}
	expect(t, s.Known, runSteps(context.Background(), t, newNode(t), s.Steps, states))
}

// expect judges a scenario's outcome: without a known issue it must have
// passed; with one it must still fail (so the table is corrected, and the
// support matrix regenerated, once the issue is fixed).
func expect(t *testing.T, known string, err error) {
	t.Helper()
	switch {
	case known == "" && err != nil:
		t.Fatal(err)
	case known != "" && err == nil:
		t.Fatalf("passes now although the table lists a known issue (%s): remove it from the table and run go test ./test/conformance -update", known)
	case known != "":
		t.Logf("fails as expected (known issue: %s): %v", known, err)
	}
}

// runLane runs every scenario of one lane as a subtest, the OVS ones
// (ovs true) or the others, each in a node made by newNode.
func runLane(t *testing.T, l Lane, ovs bool, newNode func(*testing.T) *node) {
	ran := 0
	for _, s := range Scenarios {
		if s.Lane != l || s.OVS != ovs {
			continue
		}
		ran++
		t.Run(s.Name, func(t *testing.T) { runScenarioOn(t, s, newNode) })
	}
	if ran == 0 {
		t.Fatalf("no scenario for the %s", l)
	}
}
