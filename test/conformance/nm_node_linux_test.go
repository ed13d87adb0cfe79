package conformance

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// newNMNode is a node (eth1 and eth2 veths to a peer namespace) managed
// by a private NetworkManager (internal/testbed/nmrun), reached through
// the NetworkManager backend: on this machine's kernel (nm_host_test.go)
// and on Debian's in the qemu lane (nm_qemu_test.go), whose guest carries
// NetworkManager and dbus-daemon (hack/kernel-lane/nm.sh).
func newNMNode(t *testing.T) *node {
	t.Helper()
	return newNMNodeWith(t, nmrun.Options{})
}

// newNMNodeWith is newNMNode with NetworkManager started with opts (its
// namespace and directory are the node's).
func newNMNodeWith(t *testing.T, opts nmrun.Options) *node {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw-eth1")
	nstest.Veth(t, ns, "eth2", peer, "sw-eth2")
	dir := t.TempDir()
	opts.NetNS, opts.Dir = ns.Path, filepath.Join(dir, "nm")
	in, err := nmrun.Start(context.Background(), opts)
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	uts := newUTSNS(t)
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ns.Path, UTSNS: uts, HostnameFile: filepath.Join(dir, "hostname"), Bus: in.Bus, ResolvConf: filepath.Join(in.RunDir, "resolv.conf"),
		OnTouchUp: func(p *nmstate.Plan) { t.Logf("kernel touch-up after NetworkManager:\n%s", p) }})
	if err != nil {
		t.Fatalf("opening the NetworkManager backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return &node{ns: ns, peer: peer, backend: b, stateDir: filepath.Join(dir, "state"),
		resolv: filepath.Join(in.RunDir, "resolv.conf"), uts: uts, nmBus: in.Bus, nmKeyfileDir: in.KeyfileDir}
}
