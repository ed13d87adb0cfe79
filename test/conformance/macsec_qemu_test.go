//go:build qemu

package conformance

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// The pre-shared connectivity association key of upstream's example.
const (
	exampleCAK = "50b71a8ef0bd5751ea76de6d6c98c03a"
	exampleCKN = "f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550"
)

// TestMACsecMKASecuresTraffic: macsec0 over eth1 with the example's
// CAK/CKN (port 1, so the supplicant's SCI is macsec0's) is applied; the
// peer runs its own wpa_supplicant with the same keys on sw-eth1. MKA
// installs the keys on both sides and TCP passes between the two macsec
// links, which it cannot without them (a macsec link without a secure
// association drops what it receives). Removing macsec0 stops the node's
// supplicant.
func TestMACsecMKASecuresTraffic(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	applyState(ctx, t, n, `interfaces:
- name: macsec0
  type: macsec
  state: up
  macsec:
    encrypt: true
    base-iface: eth1
    mka-cak: `+exampleCAK+`
    mka-ckn: `+exampleCKN+`
    port: 1
    validation: strict
    send-sci: true
  ipv4:
    enabled: true
    address:
    - {ip: 192.0.2.1, prefix-length: 24}
`)
	// Without a peer the node's supplicant holds macsec0 down (its
	// controlled port); the node still reports the macsec0 it was asked
	// for, up, or every show would find drift to repair.
	heldDown := false
	for deadline := time.Now().Add(10 * time.Second); !heldDown && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		l, err := n.ns.Netlink.LinkByName("macsec0")
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			cur, err := n.backend.Show(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ifc := cur.FindTyped("macsec0", nmstate.TypeMACsec); ifc == nil || ifc.State != nmstate.StateUp {
				t.Errorf("macsec0 held down by its supplicant is shown as %+v, want state up", ifc)
			}
			heldDown = true
		}
	}
	t.Logf("macsec0 held down by its supplicant before MKA: %v", heldDown)
	peerMKA(t, n.peer, "sw-eth1")
	// The peer's supplicant makes its own macsec link; it is brought up
	// when MKA succeeds (the controlled port).
	peerLink := waitMACsecLink(t, n.peer)
	if err := n.peer.Netlink.AddrAdd(peerLink, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 0, 2, 2), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	listenInPeer(t, n, "192.0.2.2:7777")
	for deadline := time.Now().Add(2 * time.Minute); !reaches(t, n, "192.0.2.2:7777"); {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(n.stateDir, "..", "supplicant", "macsec0.log"))
			t.Fatalf("no TCP over MACsec within 2 minutes; node supplicant log:\n%s", log)
		}
	}
	links, err := n.ns.Netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var macsec []string
	for _, l := range links {
		if l.Type() == "macsec" {
			macsec = append(macsec, l.Attrs().Name)
		}
	}
	if len(macsec) != 1 {
		t.Errorf("node has macsec links %v, want only macsec0 (the supplicant must use it)", macsec)
	}

	pidFile := filepath.Join(n.stateDir, "..", "supplicant", "macsec0.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the node's supplicant has no pid file: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	applyState(ctx, t, n, "interfaces:\n- {name: macsec0, type: macsec, state: absent}\n")
	if pid > 1 && syscall.Kill(pid, 0) == nil {
		t.Errorf("wpa_supplicant %d still runs after macsec0 was removed", pid)
	}
}

// peerMKA starts wpa_supplicant with the example's keys on iface of peer,
// stopped on cleanup.
func peerMKA(t *testing.T, peer *nstest.NS, iface string) {
	t.Helper()
	dir := t.TempDir()
	conf := "ctrl_interface=" + dir + "/ctrl\neapol_version=3\nap_scan=0\nnetwork={\n\tkey_mgmt=NONE\n\teapol_flags=0\n\tmacsec_policy=1\n\tmacsec_integ_only=0\n\tmacsec_port=1\n\tmka_cak=" + exampleCAK + "\n\tmka_ckn=" + exampleCKN + "\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "peer.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "peer.pid")
	t.Cleanup(func() {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 1 {
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Errorf("stopping the peer's wpa_supplicant: %v", err)
			}
		}
	})
	var out []byte
	err := peer.Do(func() error {
		var err error
		out, err = exec.Command("/usr/sbin/wpa_supplicant", "-B", "-D", "macsec_linux", "-i", iface,
			"-c", filepath.Join(dir, "peer.conf"), "-P", pidFile, "-f", filepath.Join(dir, "peer.log")).CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("starting the peer's wpa_supplicant: %v\n%s", err, out)
	}
}

// waitMACsecLink waits (bounded) for a macsec link in ns.
func waitMACsecLink(t *testing.T, ns *nstest.NS) netlink.Link {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		links, err := ns.Netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Type() == "macsec" {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer's supplicant made no macsec link in 2 minutes")
		}
	}
}
