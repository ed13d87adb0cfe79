package nm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// nmGet is `nmcli -g fields connection show id`, one value per line.
func nmGet(t *testing.T, e *env, id, fields string) []string {
	t.Helper()
	names := strings.Split(fields, ",")
	var got []string
	// nmcli prints a secret empty when its own GetSecrets call to
	// NetworkManager fails (seen on loaded CI runs while the backend's
	// GetSecrets had the secret): ask again a few times before a test
	// sees an empty secret.
	for attempt := 0; attempt < 5; attempt++ {
		out, err := nmrun.Nmcli(context.Background(), e.nm.Bus, "-s", "-g", fields, "connection", "show", id)
		if err != nil {
			t.Fatalf("nmcli -g %s: %v: %s", fields, err, out)
		}
		// -g escapes the separator (:) inside values.
		got = strings.Split(strings.ReplaceAll(strings.TrimRight(out, "\n"), `\:`, ":"), "\n")
		if !emptySecret(names, got) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	return got
}

func emptySecret(names, values []string) bool {
	for i, n := range names {
		if i < len(values) && values[i] == "" && (strings.Contains(n, "password") || strings.HasSuffix(n, ".psk")) {
			return true
		}
	}
	return false
}

func applyOK(t *testing.T, e *env, b *nm.Backend, y string) {
	t.Helper()
	if _, err := apply.Apply(context.Background(), b, decode(t, y), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// TestGCKeyfilesOfExtrasLoad: the gc keyfiles of the wired, ethtool,
// LLDP, MPTCP, SR-IOV, 802.1X and DHCP-knob cases (testdata/gc) load into
// NetworkManager 1.42 and it reads each mapped property back as nmstate
// means it (nmcli's names and values).
func TestGCKeyfilesOfExtrasLoad(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		file, fields string
		want         []string
	}{
		{"eth1_ethtool_lldp_mptcp.yml",
			"802-3-ethernet.cloned-mac-address,802-3-ethernet.accept-all-mac-addresses,802-3-ethernet.auto-negotiate,802-3-ethernet.speed,802-3-ethernet.duplex," +
				"ethtool.feature-gro,ethtool.feature-gso,ethtool.feature-rx-vlan-filter,ethtool.coalesce-rx-usecs,ethtool.coalesce-adaptive-rx,ethtool.ring-rx,ethtool.ring-tx," +
				"ethtool.pause-autoneg,ethtool.pause-rx,ethtool.pause-tx,connection.lldp,connection.mptcp-flags",
			[]string{"02:00:00:00:00:A1", "1", "no", "1000", "full", "off", "off", "on", "30", "0", "256", "512", "off", "on", "off", "enable-rx", "0x38"}},
		{"eth1_sriov.yml", "sriov.total-vfs,sriov.autoprobe-drivers,sriov.vfs",
			[]string{"2", "0", "0 mac=02:00:00:00:01:00 max-tx-rate=200 min-tx-rate=100 spoof-check=true trust=false vlans=100.5, 1 trust=true vlans=200.0.ad"}},
		{"eth1_8021x.yml", "802-1x.identity,802-1x.eap,802-1x.ca-cert,802-1x.client-cert,802-1x.private-key,802-1x.private-key-password",
			[]string{"client.example.org", "tls", "/etc/pki/802-1x/ca.pem", "/etc/pki/802-1x/client.pem", "/etc/pki/802-1x/client.key", "password"}},
		{"eth1_dhcp_knobs.yml",
			"ipv4.dhcp-client-id,ipv4.dhcp-fqdn,ipv4.dhcp-send-hostname,ipv4.route-metric,ipv4.may-fail,ipv6.dhcp-duid,ipv6.dhcp-iaid,ipv6.token,ipv6.dhcp-send-hostname,ipv6.may-fail,ipv6.ra-timeout",
			[]string{"duid", "node1.example.org", "yes", "200", "no", "llt", "mac", "::a:b:c:d", "no", "yes", "2147483647"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/gc", c.file))
			if err != nil {
				t.Fatal(err)
			}
			files, err := nm.GenerateKeyfiles(decode(t, string(data)))
			if err != nil || len(files) != 1 {
				t.Fatalf("gc: %v (%d files)", err, len(files))
			}
			path := filepath.Join(e.nm.KeyfileDir, files[0].Name)
			if err := os.WriteFile(path, files[0].Data, 0o600); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = os.Remove(path)
				_, _ = nmrun.Nmcli(context.Background(), e.nm.Bus, "connection", "reload")
			}()
			if out, err := nmrun.Nmcli(context.Background(), e.nm.Bus, "connection", "load", path); err != nil {
				t.Fatalf("nmcli connection load: %v: %s", err, out)
			}
			got := nmGet(t, e, "eth1", c.fields)
			fields := strings.Split(c.fields, ",")
			for i, f := range fields {
				g := ""
				if i < len(got) {
					g = got[i]
				}
				if g != c.want[i] {
					t.Errorf("%s = %q, want %q", f, g, c.want[i])
				}
			}
		})
	}
}

// TestWiredAndEthtoolThroughNetworkManager: mac-address, accept-all-mac-
// addresses, link modes (a veth's own: it has no others) and ethtool
// features of a veth are set by NetworkManager from the profile (the
// kernel touch-up has nothing left to do), verify against the kernel's
// read, and a later apply that names none of them keeps them in the
// profile.
func TestWiredAndEthtoolThroughNetworkManager(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	var touchUps []string
	b2, err := nm.Open(context.Background(), nm.Options{NetNS: e.ns.Path, Bus: e.nm.Bus,
		OnTouchUp: func(p *nmstate.Plan) { touchUps = append(touchUps, p.String()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b2.Close() })
	_ = b
	applyOK(t, e, b2, `
interfaces:
- name: eth1
  type: ethernet
  state: up
  mac-address: 02:00:00:00:00:a1
  accept-all-mac-addresses: true
  ethernet: {auto-negotiation: false, speed: 10000, duplex: full}
  ethtool:
    feature:
      rx-gro: false
      tx-generic-segmentation: false
  ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}
`)
	if len(touchUps) > 0 {
		t.Errorf("the kernel touch-up had to do what the profile holds:\n%s", strings.Join(touchUps, "\n"))
	}
	if got := nmGet(t, e, "eth1", "802-3-ethernet.cloned-mac-address,802-3-ethernet.accept-all-mac-addresses,802-3-ethernet.auto-negotiate,802-3-ethernet.speed,802-3-ethernet.duplex,ethtool.feature-gro,ethtool.feature-gso"); strings.Join(got, "|") != "02:00:00:00:00:A1|1|no|10000|full|off|off" {
		t.Errorf("profile holds %q", got)
	}
	l, err := e.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().HardwareAddr.String() != "02:00:00:00:00:a1" || l.Attrs().Promisc != 1 {
		t.Errorf("kernel: mac %s promisc %d", l.Attrs().HardwareAddr, l.Attrs().Promisc)
	}
	// An apply about IP only: the profile is rewritten and keeps them.
	applyOK(t, e, b2, `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: true, address: [{ip: 192.0.2.11, prefix-length: 24}]}
`)
	if got := nmGet(t, e, "eth1", "802-3-ethernet.cloned-mac-address,ethtool.feature-gro,ipv4.addresses"); strings.Join(got, "|") != "02:00:00:00:00:A1|off|192.0.2.11/24" {
		t.Errorf("after an IP-only apply the profile holds %q", got)
	}
	cur, err := b2.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ifc := cur.Find("eth1")[0]
	if ifc.Ethtool == nil || ifc.Ethtool.Feature["rx-gro"] || ifc.Ethtool.Feature["tx-generic-segmentation"] {
		t.Errorf("kernel features after the second apply: %+v", ifc.Ethtool)
	}
	// Link modes as the kernel reports them (ethtool netlink): a veth's.
	if e := ifc.Ethernet; e == nil || e.AutoNegotiation == nil || *e.AutoNegotiation || e.Speed == nil || *e.Speed != 10000 || e.Duplex == nil || *e.Duplex != "full" {
		t.Errorf("shown ethernet %+v", e)
	}
}

// TestEthtoolFeatureNetworkManagerLacks: a kernel feature without a
// NetworkManager property fails before anything changes, naming the key.
func TestEthtoolFeatureNetworkManagerLacks(t *testing.T) {
	_, err := nm.GenerateKeyfiles(decode(t, `
interfaces:
- {name: eth1, type: ethernet, ethtool: {feature: {tx-udp_tnl-csum-segmentation: false}}}
`))
	if err == nil || !strings.Contains(err.Error(), "interfaces[name=eth1]") || !strings.Contains(err.Error(), "ethtool.feature.tx-udp_tnl-csum-segmentation") {
		t.Errorf("got %v", err)
	}
}
