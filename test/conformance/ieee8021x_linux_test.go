//go:build !qemu

package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// authenticator is hostapd guarding the peer's end of eth1 (sw-eth1), as
// an 802.1X switch port does: an nftables ingress filter drops every
// frame but EAPOL until hostapd reports the station authorized, when its
// action script (run by hostapd_cli on AP-STA-CONNECTED) removes the
// filter; it puts the filter back when the station leaves
// (AP-STA-DISCONNECTED: EAPOL-Logoff). hostapd's internal EAP server authenticates with the users of
// eap_user (TLS by certificate, PEAP with MSCHAPv2).
type authenticator struct {
	dir string
}

// guardedPort starts the authenticator in n's peer namespace.
func guardedPort(t *testing.T, n *node) *authenticator {
	t.Helper()
	for _, p := range []string{"hostapd", "hostapd_cli", "nft", "openssl"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is missing (make setup installs it): %v", p, err)
		}
	}
	a := &authenticator{dir: t.TempDir()}
	a.pki(t)
	files := map[string]string{
		"hostapd.conf": fmt.Sprintf(`interface=sw-eth1
driver=wired
ieee8021x=1
eap_server=1
eap_user_file=%[1]s/eap_user
ca_cert=%[1]s/ca.crt
server_cert=%[1]s/server.crt
private_key=%[1]s/server.key
ctrl_interface=%[1]s/ctrl
`, a.dir),
		"eap_user": `"client.example.org" TLS,PEAP
"client.example.org" MSCHAPV2 "password" [2]
`,
		"action.sh": fmt.Sprintf(`#!/bin/sh
echo "$2" >>%[1]s/events
if [ "$2" = AP-STA-CONNECTED ]; then nft delete table netdev guard; fi
if [ "$2" = AP-STA-DISCONNECTED ]; then nft -f %[1]s/guard.nft; fi
`, a.dir),
		"guard.nft": `table netdev guard {
	chain in {
		type filter hook ingress device sw-eth1 priority 0; policy accept;
		ether type != 0x888e drop
	}
}
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.dir, name), []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a.inPeer(t, n, "nft", "-f", filepath.Join(a.dir, "guard.nft"))
	t.Cleanup(func() { a.stop(t, "hostapd_cli.pid", "hostapd.pid") })
	a.inPeer(t, n, "hostapd", "-B", "-P", filepath.Join(a.dir, "hostapd.pid"), "-f", filepath.Join(a.dir, "hostapd.log"), filepath.Join(a.dir, "hostapd.conf"))
	a.inPeer(t, n, "hostapd_cli", "-p", filepath.Join(a.dir, "ctrl"), "-i", "sw-eth1", "-a", filepath.Join(a.dir, "action.sh"), "-B", "-P", filepath.Join(a.dir, "hostapd_cli.pid"))
	return a
}

// pki makes a CA, hostapd's server certificate and the client
// certificate of the TLS example, its key encrypted with "password".
func (a *authenticator) pki(t *testing.T) {
	t.Helper()
	for _, args := range [][]string{
		{"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=knmstate test CA"},
		{"req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=server.example.org"},
		{"x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2"},
		{"req", "-newkey", "rsa:2048", "-keyout", "client.example.org.key", "-passout", "pass:password", "-out", "client.csr", "-subj", "/CN=client.example.org"},
		{"x509", "-req", "-in", "client.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "client.example.org.crt", "-days", "2"},
	} {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = a.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
}

func (a *authenticator) inPeer(t *testing.T, n *node, prog string, args ...string) {
	t.Helper()
	var out []byte
	err := n.peer.Do(func() error {
		var err error
		out, err = exec.Command(prog, args...).CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("%s %v in the peer namespace: %v\n%s", prog, args, err, out)
	}
}

// stop ends the daemons this test started, by their pid files.
func (a *authenticator) stop(t *testing.T, pidFiles ...string) {
	for _, f := range pidFiles {
		data, err := os.ReadFile(filepath.Join(a.dir, f))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 1 {
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Errorf("stopping %s (%d): %v", f, pid, err)
			}
		}
	}
}

// events is what hostapd_cli's action script has seen.
func (a *authenticator) events() string {
	data, _ := os.ReadFile(filepath.Join(a.dir, "events"))
	return string(data)
}

// waitEvent waits (bounded) until hostapd reported ev.
func (a *authenticator) waitEvent(t *testing.T, ev string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(a.events(), ev); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(a.dir, "hostapd.log"))
			t.Fatalf("hostapd did not report %s; events:\n%s\nhostapd.log:\n%s", ev, a.events(), log)
		}
	}
}

// TestIEEE8021XGuardedPort is the acceptance of 802.1X: the peer's port,
// guarded by hostapd, passes traffic only after the applied state
// authenticates. A wrong PEAP password is applied first (the supplicant
// runs, hostapd refuses it, the port stays closed), then upstream's PEAP
// example, unmodified, opens it (TLS: an unknown identity first). The TLS example authenticates too, with
// its certificate paths pointed at the test's PKI (the example's
// /etc/pki/802-1x-test does not exist here).
func TestIEEE8021XGuardedPort(t *testing.T) {
	for _, c := range []struct {
		name, file string
		// wrong, right: a line of the example and the line that spoils it
		wrong, right string
	}{
		{"peap", "eth1_with_ieee_802_1x_peap.yml", "password: wrong-password\n", "password: password\n"},
		// An identity hostapd does not know (a wrong key password would
		// stop the supplicant before it talks to hostapd at all).
		{"tls", "eth1_with_ieee_802_1x.yml", "identity: intruder.example.org\n", "identity: client.example.org\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := newNode(t)
			n.ns.AddrAdd(t, "eth1", "192.0.2.1/24")
			n.peer.AddrAdd(t, "sw-eth1", "192.0.2.2/24")
			listenInPeer(t, n, "192.0.2.2:7777")
			a := guardedPort(t, n)
			if reaches(t, n, "192.0.2.2:7777") {
				t.Fatal("the guarded port passes traffic before any authentication")
			}
			example := string(readExample(t, c.file))
			example = strings.ReplaceAll(example, "/etc/pki/802-1x-test", a.dir)

			bad := strings.Replace(example, c.right, c.wrong, 1)
			if bad == example {
				t.Fatalf("%s has no %q to spoil", c.file, c.right)
			}
			applyState(ctx, t, n, bad)
			a.waitEvent(t, "CTRL-EVENT-EAP-FAILURE")
			if strings.Contains(a.events(), "AP-STA-CONNECTED") || reaches(t, n, "192.0.2.2:7777") {
				t.Fatalf("a wrong secret opened the port; events:\n%s", a.events())
			}

			applyState(ctx, t, n, example)
			a.waitEvent(t, "AP-STA-CONNECTED")
			if !reaches(t, n, "192.0.2.2:7777") {
				t.Fatalf("authenticated, but the port passes no traffic; events:\n%s", a.events())
			}
		})
	}
}

// TestIEEE8021XRollback: an apply that adds 802.1x to a NIC and is rolled
// back leaves the NIC as it was: no supplicant runs for it any more, show
// reports no 802.1x section, and the guarded port closes again.
func TestIEEE8021XRollback(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.ns.AddrAdd(t, "eth1", "192.0.2.1/24")
	n.peer.AddrAdd(t, "sw-eth1", "192.0.2.2/24")
	listenInPeer(t, n, "192.0.2.2:7777")
	a := guardedPort(t, n)
	desired, err := nmstate.Decode(readExample(t, "eth1_with_ieee_802_1x_peap.yml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := n.options()
	opts.NoCommit = true
	if _, err := apply.Apply(ctx, n.backend, desired, opts); err != nil {
		t.Fatalf("apply: %v", err)
	}
	a.waitEvent(t, "AP-STA-CONNECTED")
	if !reaches(t, n, "192.0.2.2:7777") {
		t.Fatalf("authenticated, but the port passes no traffic; events:\n%s", a.events())
	}
	pidFile := filepath.Join(filepath.Dir(n.stateDir), "supplicant", "eth1.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the supplicant's pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %s holds %q", pidFile, data)
	}
	if _, err := apply.Rollback(ctx, n.backend, n.stateDir); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("wpa_supplicant %d still runs after the rollback (kill 0: %v)", pid, err)
	}
	cur, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range cur.Interfaces {
		if ifc.Name == "eth1" && ifc.IEEE8021X != nil {
			t.Errorf("eth1 still has an 802.1x section after the rollback: identity %v", ifc.IEEE8021X.Identity)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for reaches(t, n, "192.0.2.2:7777") {
		if time.Now().After(deadline) {
			t.Fatalf("the port still passes traffic 30s after the rollback; events:\n%s", a.events())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
