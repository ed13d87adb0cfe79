package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// OVSWorkload is the OVS workload: n OVS bridges (userspace datapath) each
// with one internal interface carrying an address, as one desired state,
// and the same as one ovs-vsctl transaction (Vsctl: its arguments, the
// same rows nmstate's OVS model makes: a bridge without a local port, one
// port, one internal interface) plus an `ip -batch` for the addresses.
type OVSWorkload struct {
	Name  string
	State *nmstate.State
	Vsctl []string
	Batch []string
}

// OVSBridges builds the OVS workload of n bridges.
func OVSBridges(n int) (*OVSWorkload, error) {
	var doc strings.Builder
	w := &OVSWorkload{Name: fmt.Sprintf("ovs-bridges%d", n)}
	doc.WriteString("interfaces:\n")
	for i := range n {
		br, in, addr := fmt.Sprintf("br%d", i), fmt.Sprintf("ovs%d", i), fmt.Sprintf("10.%d.%d.1", 100+i/250, i%250)
		fmt.Fprintf(&doc, "- {name: %s, type: ovs-bridge, state: up, bridge: {options: {datapath: netdev, stp: {enabled: false}}, port: [{name: %s}]}}\n", br, in)
		fmt.Fprintf(&doc, "- {name: %s, type: ovs-interface, state: up, ipv4: {enabled: true, address: [{ip: %s, prefix-length: 24}]}}\n", in, addr)
		w.Vsctl = append(w.Vsctl,
			"--", "--id=@i"+in, "create", "Interface", "name="+in, "type=internal",
			"--", "--id=@p"+in, "create", "Port", "name="+in, "interfaces=@i"+in,
			"--", "--id=@b"+br, "create", "Bridge", "name="+br, "ports=@p"+in, "datapath_type=netdev",
			"--", "add", "Open_vSwitch", ".", "bridges", "@b"+br)
		w.Batch = append(w.Batch, "addr add "+addr+"/24 dev "+in, "link set "+in+" up")
	}
	s, err := nmstate.Decode([]byte(doc.String()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	w.State = s
	return w, nil
}

// ovsNode is a fresh namespace with its own Open vSwitch (ovs-vswitchd
// inside it); close stops OVS and removes the namespace.
type ovsNode struct {
	ns  *namespace
	ovs *ovsrun.OVS
	dir string
}

func newOVSNode(ctx context.Context, o Options) (*ovsNode, error) {
	ns, err := newNamespace(ctx, o.IP)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "knmstate-bench-ovs-")
	if err != nil {
		return nil, errors.Join(err, ns.remove())
	}
	v, err := ovsrun.Start(ctx, ovsrun.Options{Dir: dir, NetNS: ns.Name})
	if err != nil {
		return nil, errors.Join(err, ns.remove(), os.RemoveAll(dir))
	}
	return &ovsNode{ns: ns, ovs: v, dir: dir}, nil
}

func (n *ovsNode) close() error {
	// OVS first: ovs-vswitchd removes its taps on exit.
	return errors.Join(n.ovs.Stop(), n.ns.remove(), os.RemoveAll(n.dir))
}

// openOVS opens the node's kernel and OVS backends.
func (n *ovsNode) open(ctx context.Context) (*ovs.Backend, func(), error) {
	kb, err := kernel.Open(ctx, kernel.Options{NetNS: n.ns.Name})
	if err != nil {
		return nil, nil, err
	}
	b := ovs.Open(ctx, kb, ovs.Options{Address: n.ovs.Address, DefaultDatapath: "netdev"})
	if err := b.Connected(); err != nil {
		kb.Close()
		return nil, nil, err
	}
	return b, func() { b.Close(); kb.Close() }, nil
}

// OVSApplyOnce applies w.State with pkg/apply through the OVS backend
// (open, read kernel and OVSDB, merge, plan, checkpoint, one OVSDB
// transaction waiting for ovs-vswitchd, the kernel operations, re-read and
// verify, commit) on a fresh node with a fresh OVS, and returns the time
// that took. Starting OVS and removing the node are not timed.
func OVSApplyOnce(ctx context.Context, w *OVSWorkload, opts Options) (Sample, error) {
	o := opts.withDefaults()
	n, err := newOVSNode(ctx, o)
	if err != nil {
		return Sample{}, err
	}
	stateDir, err := os.MkdirTemp(n.dir, "state-")
	if err != nil {
		return Sample{}, errors.Join(err, n.close())
	}
	if err := settle(ctx, o.Settle); err != nil {
		return Sample{}, errors.Join(err, n.close())
	}
	desired := w.State.Clone()
	start, cpu := time.Now(), selfCPU()
	b, closeB, err := n.open(ctx)
	if err != nil {
		return Sample{}, errors.Join(err, n.close())
	}
	_, err = apply.Apply(ctx, b, desired, apply.Options{StateDir: stateDir, VerifyInterval: 20 * time.Millisecond})
	d := Sample{Wall: time.Since(start), CPU: selfCPU() - cpu}
	closeB()
	if err != nil {
		err = fmt.Errorf("%s: apply: %w", w.Name, err)
	}
	return d, errors.Join(err, n.close())
}

// OVSBatchOnce does the same with one `ovs-vsctl` transaction (which
// waits for ovs-vswitchd, as ours does) and `ip -n NS -batch` for the
// addresses and link states, on a fresh node with a fresh OVS.
func OVSBatchOnce(ctx context.Context, w *OVSWorkload, opts Options) (Sample, error) {
	o := opts.withDefaults()
	n, err := newOVSNode(ctx, o)
	if err != nil {
		return Sample{}, err
	}
	file, err := writeBatch(n.dir, w.Name, w.Batch)
	if err != nil {
		return Sample{}, errors.Join(err, n.close())
	}
	if err := settle(ctx, o.Settle); err != nil {
		return Sample{}, errors.Join(err, n.close())
	}
	vsctl := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + n.ovs.Address, "--timeout=60"}, w.Vsctl...)...)
	ip := exec.CommandContext(ctx, o.IP, "-n", n.ns.Name, "-batch", file)
	start := time.Now()
	out, err := vsctl.CombinedOutput()
	if err == nil {
		var ipOut []byte
		if ipOut, err = ip.CombinedOutput(); err != nil {
			out = ipOut
		}
	}
	d := Sample{Wall: time.Since(start), CPU: childCPU(vsctl) + childCPU(ip)}
	if err != nil {
		err = fmt.Errorf("%s: ovs-vsctl + ip -batch: %w: %s", w.Name, err, strings.TrimSpace(string(out)))
	}
	return d, errors.Join(err, n.close())
}

// ErrUnavailable marks a comparison this machine cannot run (a program it
// needs is not installed).
var ErrUnavailable = errors.New("not available here")

// ovsAvailable says why the OVS comparisons cannot run (nil = they can).
func ovsAvailable() error {
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%w: %s (Debian's openvswitch-switch) is not installed", ErrUnavailable, bin)
		}
	}
	return nil
}

// OVSApply50Compare is ovs.apply50: 50 OVS bridges each with an internal
// interface and an address, in one state, against one ovs-vsctl
// transaction plus ip -batch (target ratio 1.2).
func OVSApply50Compare(ctx context.Context, opts Options) (*Comparison, error) {
	if err := ovsAvailable(); err != nil {
		return nil, err
	}
	w, err := OVSBridges(50)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	var ours, base []Sample
	for range o.Runs {
		d, err := OVSApplyOnce(ctx, w, o)
		if err != nil {
			return nil, err
		}
		ours = append(ours, d)
		if d, err = OVSBatchOnce(ctx, w, o); err != nil {
			return nil, err
		}
		base = append(base, d)
	}
	return newComparison("ovs.apply50", 1.2, ours, base), nil
}

// OVSShow50Compare is ovs.show50: Show (kernel and OVSDB, merged) of a
// node with the 50 bridges of ovs.apply50, against `ovs-vsctl show` plus
// `ip -j addr show` (target ratio 1.0).
func OVSShow50Compare(ctx context.Context, opts Options) (*Comparison, error) {
	if err := ovsAvailable(); err != nil {
		return nil, err
	}
	w, err := OVSBridges(50)
	if err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	n, err := newOVSNode(ctx, o)
	if err != nil {
		return nil, err
	}
	defer n.close()
	b, closeB, err := n.open(ctx)
	if err != nil {
		return nil, err
	}
	_, err = apply.Apply(ctx, b, w.State.Clone(), apply.Options{StateDir: n.dir + "/state", VerifyInterval: 20 * time.Millisecond})
	closeB()
	if err != nil {
		return nil, fmt.Errorf("setting up 50 OVS bridges: %w", err)
	}
	var ours, base []Sample
	for range o.Runs {
		if err := settle(ctx, o.Settle); err != nil {
			return nil, err
		}
		start, cpu := time.Now(), selfCPU()
		b, closeB, err := n.open(ctx)
		if err != nil {
			return nil, err
		}
		s, err := b.Show(ctx)
		d := Sample{Wall: time.Since(start), CPU: selfCPU() - cpu}
		closeB()
		if err != nil {
			return nil, fmt.Errorf("show: %w", err)
		}
		if got := len(s.Interfaces); got < 100 {
			return nil, fmt.Errorf("show: %d interfaces, want the 50 bridges and their 50 internal interfaces", got)
		}
		ours = append(ours, d)
		if err := settle(ctx, o.Settle); err != nil {
			return nil, err
		}
		var cpuBase time.Duration
		start = time.Now()
		for _, args := range [][]string{{"ovs-vsctl", "--db=" + n.ovs.Address, "show"}, {o.IP, "-n", n.ns.Name, "-j", "addr", "show"}} {
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			if _, err := cmd.Output(); err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
			}
			cpuBase += childCPU(cmd)
		}
		base = append(base, Sample{Wall: time.Since(start), CPU: cpuBase})
	}
	return newComparison("ovs.show50", 1.0, ours, base), nil
}
