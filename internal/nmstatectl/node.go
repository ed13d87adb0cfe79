package nmstatectl

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// nodeAddr says which node a verb acts on: the global flags, or the
// values recorded in a checkpoint.
type nodeAddr struct {
	netns, resolvConf, utsNS string
	// supplicantDir is the wpa_supplicant directory of 802.1x
	// interfaces: "supplicant" under the state directory.
	supplicantDir string
	// hostnameFile is the static hostname, "hostname" under the state
	// directory, when the hostname is managed (a UTS namespace).
	hostnameFile string
	// lldpDir keeps lldp.enabled and the neighbours the node runtime
	// heard: "lldp" under the state directory.
	lldpDir string
	// backend is auto, kernel or networkmanager; bus NetworkManager's
	// D-Bus address ("" = the system bus); memoryOnly keeps profiles in
	// memory (default: saved to disk).
	backend, bus string
	memoryOnly   bool
	// ovsdb is the Open vSwitch database socket, ovsDatapath the datapath
	// of new bridges (kernel backend).
	ovsdb, ovsDatapath string
}

func (g *globalOptions) node() nodeAddr {
	n := nodeAddr{netns: g.netns, resolvConf: g.resolvConf, utsNS: g.utsNS, backend: g.backend, bus: g.dbusAddress,
		ovsdb: g.ovsdb, ovsDatapath: g.ovsDatapath}
	n.setStateDir(g.stateDir)
	return n
}

// setStateDir derives the files the node keeps in its state directory
// (those not set yet): the same for nmstatectl's verbs and its service,
// and the handler uses the service's (its --runtime-state-dir).
func (n *nodeAddr) setStateDir(stateDir string) {
	if n.supplicantDir == "" {
		n.supplicantDir = supplicantDir(stateDir)
	}
	if n.lldpDir == "" && stateDir != "" {
		n.lldpDir = filepath.Join(stateDir, "lldp")
	}
	if n.hostnameFile == "" && n.utsNS != "" && stateDir != "" {
		n.hostnameFile = filepath.Join(stateDir, "hostname")
	}
}

// supplicantDir is where a state directory keeps its wpa_supplicants.
func supplicantDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, "supplicant")
}

// checkpointNode is the node a checkpoint record names, through the
// backend that applied it.
func checkpointNode(rec *apply.Checkpoint) nodeAddr {
	backend := backendKernel
	if rec.Backend == nm.Name {
		backend = backendNM
	}
	return nodeAddr{netns: rec.NetNS, resolvConf: rec.ResolvConf, utsNS: rec.UTSNS, backend: backend, bus: rec.BackendAddress, ovsdb: rec.OVSDB}
}

// Backend choices (--backend).
const (
	backendAuto   = "auto"
	backendKernel = "kernel"
	backendNM     = nm.Name
)

func validBackend(s string) error {
	switch s {
	case backendAuto, backendKernel, backendNM:
		return nil
	}
	return fmt.Errorf("--backend: %q is not one of auto, kernel, networkmanager", s)
}

// chooseBackend resolves auto: NetworkManager when it owns its name on the
// bus, else the kernel. The system bus's NetworkManager manages this
// process's own namespace only, so for another namespace (--netns) auto
// asks a bus only when one is given (--dbus-address).
func chooseBackend(ctx context.Context, n nodeAddr) (string, error) {
	if err := validBackend(n.backend); err != nil {
		return "", err
	}
	if n.backend != backendAuto {
		return n.backend, nil
	}
	if n.netns != "" && n.bus == "" {
		return backendKernel, nil
	}
	if nm.Available(ctx, n.bus) {
		return backendNM, nil
	}
	return backendKernel, nil
}

// nmNode is the NetworkManager backend as the apply orchestrator drives
// it from nmstatectl: NetworkManager runs DHCP and autoconf itself, so no
// node runtime follows it.
type nmNode struct{ *nm.Backend }

func (nmNode) OnCheckpoint(context.Context, *apply.Checkpoint) error { return nil }

// openShow opens the backend a read goes through.
func openShow(ctx context.Context, n nodeAddr) (apply.Backend, func(), error) {
	which, err := chooseBackend(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	if which == backendNM {
		b, err := nm.Open(ctx, n.nmOptions())
		if err != nil {
			return nil, nil, fmt.Errorf("opening the node: %w", err)
		}
		return b, func() { b.Close() }, nil
	}
	kb, err := openKernel(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	b := openOVS(ctx, kb, n)
	return b, func() { b.Close(); kb.Close() }, nil
}

// nmOptions are the NetworkManager backend's options for the node: its
// OVS database as the kernel backend's node would use it (openOVS).
func (n nodeAddr) nmOptions() nm.Options {
	addr := n.ovsdb
	if addr == "" {
		addr = ovsdb.DefaultAddress
	}
	return nm.Options{NetNS: n.netns, UTSNS: n.utsNS, HostnameFile: n.hostnameFile, ResolvConf: n.resolvConf, Bus: n.bus, MemoryOnly: n.memoryOnly,
		OVSDB: addr, OVSDatapath: n.ovsDatapath}
}

// openKernel opens the kernel backend for a node.
func openKernel(ctx context.Context, n nodeAddr) (*kernel.Backend, error) {
	b, err := kernel.Open(ctx, kernel.Options{NetNS: n.netns, ResolvConf: n.resolvConf, UTSNS: n.utsNS, SupplicantDir: n.supplicantDir, HostnameFile: n.hostnameFile, LLDPDir: n.lldpDir})
	if err != nil {
		return nil, fmt.Errorf("opening the node: %w", err)
	}
	return b, nil
}

// runtimeNode is a node backend with the node runtime following every plan
// it executes (leases for dhcp/autoconf, see runtimeFollower).
type runtimeNode interface {
	apply.Backend
	OnCheckpoint(context.Context, *apply.Checkpoint) error
}

// openNode opens a backend the apply orchestrator can drive, with the node
// runtime of stateDir following it, so one-off applies and rollbacks start
// or stop DHCP/autoconf like the service does. warn receives the runtime's
// warnings (e.g. that nothing renews a one-off lease).
func openNode(ctx context.Context, n nodeAddr, stateDir string, warn io.Writer) (runtimeNode, func(), error) {
	n.setStateDir(stateDir)
	which, err := chooseBackend(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	if which == backendNM {
		b, err := nm.Open(ctx, n.nmOptions())
		if err != nil {
			return nil, nil, fmt.Errorf("opening the node: %w", err)
		}
		return nmNode{b}, func() { b.Close() }, nil
	}
	kb, err := openKernel(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	ob := openOVS(ctx, kb, n)
	ab, closeRT, err := runtimeFollower(kb, ob, n, stateDir, warn)
	if err != nil {
		ob.Close()
		kb.Close()
		return nil, nil, err
	}
	return ab, func() { closeRT(); ob.Close(); kb.Close() }, nil
}

// openOVS puts the node's Open vSwitch database next to its kernel; a node
// without a reachable OVSDB shows no OVS, and refuses OVS states before
// changing anything.
func openOVS(ctx context.Context, kb *kernel.Backend, n nodeAddr) *ovs.Backend {
	addr := n.ovsdb
	if addr == "" {
		addr = ovsdb.DefaultAddress
	}
	return ovs.Open(ctx, kb, ovs.Options{Address: addr, DefaultDatapath: n.ovsDatapath})
}
