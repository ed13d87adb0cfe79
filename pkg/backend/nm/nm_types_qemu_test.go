//go:build qemu

// These tests need bonding, 8021q, dummy, vrf and bridge VLAN filtering,
// which the development VM's kernel lacks: they run in the kernel lane
// (hack/kernel-lane), on Debian's kernel, with NetworkManager 1.42.

package nm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// bondState is bond0 over eth1 and eth2 in mode with the given options
// (a YAML flow mapping body) and eth2's queue-id.
func bondState(mode, opts string, queueID int) string {
	return fmt.Sprintf(`
interfaces:
- name: bond0
  type: bond
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.5, prefix-length: 24}]}
  link-aggregation:
    mode: %s
    options: {%s}
    port: [eth1, eth2]
    ports-config: [{name: eth1}, {name: eth2, queue-id: %d}]
`, mode, opts, queueID)
}

// TestBondThroughNetworkManager: a bond over two NICs in every mode, with
// options, changed from mode to mode (the previous mode's options go),
// and with a queue-id change (which takes the port down first), is made
// by NetworkManager's profiles, verifies and is a fixed point.
func TestBondThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b, touchUps := e.openCounting(t)
	for i, tc := range []struct{ mode, opts string }{
		{"active-backup", "miimon: 100, primary: eth1, fail_over_mac: active, num_grat_arp: 3"},
		{"802.3ad", "miimon: 100, lacp_rate: fast, xmit_hash_policy: layer3+4, ad_actor_sys_prio: 100, min_links: 1"},
		{"balance-rr", "miimon: 100, packets_per_slave: 3"},
		{"balance-xor", "miimon: 100, xmit_hash_policy: layer2+3"},
		{"broadcast", "miimon: 100, updelay: 200, downdelay: 200"},
		{"balance-tlb", "miimon: 100, tlb_dynamic_lb: false"},
		{"balance-alb", "miimon: 100, primary: eth2"},
		{"active-backup", "arp_interval: 100, arp_ip_target: 192.0.2.1, arp_validate: active, arp_all_targets: all"},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, tc.mode), func(t *testing.T) {
			applyFixedPoint(t, e, b, touchUps, bondState(tc.mode, tc.opts, 2+i%2))
			l, ok := link(t, e, "bond0").(*netlink.Bond)
			if !ok || l.Mode.String() != tc.mode {
				t.Errorf("bond0 is %+v, want mode %s", link(t, e, "bond0"), tc.mode)
			}
			for _, p := range []string{"eth1", "eth2"} {
				if link(t, e, p).Attrs().MasterIndex != l.Attrs().Index {
					t.Errorf("%s is not a port of bond0", p)
				}
			}
		})
	}
}

// TestBondVLANThroughNetworkManager: a VLAN on a bond, with the address on
// the VLAN.
func TestBondVLANThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b, touchUps := e.openCounting(t)
	applyFixedPoint(t, e, b, touchUps, bondVLANState)
	v, ok := link(t, e, "bond0.101").(*netlink.Vlan)
	if !ok || v.VlanId != 101 || v.Attrs().ParentIndex != link(t, e, "bond0").Attrs().Index {
		t.Errorf("bond0.101 is %+v", link(t, e, "bond0.101"))
	}
}

const bondVLANState = `
interfaces:
- name: bond0
  type: bond
  state: up
  link-aggregation: {mode: active-backup, options: {miimon: 100}, port: [eth1, eth2]}
- name: bond0.101
  type: vlan
  state: up
  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}
  vlan: {base-iface: bond0, id: 101}
`

// TestVLANOnEthernetThroughNetworkManager: a VLAN on eth1, then its id,
// protocol and flags changed (NetworkManager recreates it, taken down
// first).
func TestVLANOnEthernetThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1")
	b, touchUps := e.openCounting(t)
	for _, tc := range []struct {
		id    int
		extra string
		proto string
	}{
		{10, "reorder-headers: true", "802.1Q"},
		{20, "protocol: 802.1ad, reorder-headers: false, loose-binding: true, registration-protocol: mvrp", "802.1ad"},
	} {
		applyFixedPoint(t, e, b, touchUps, fmt.Sprintf(`
interfaces:
- name: eth1.v
  type: vlan
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}
  vlan: {base-iface: eth1, id: %d, %s}
`, tc.id, tc.extra))
		v, ok := link(t, e, "eth1.v").(*netlink.Vlan)
		want := map[string]int{"802.1Q": int(netlink.VLAN_PROTOCOL_8021Q), "802.1ad": int(netlink.VLAN_PROTOCOL_8021AD)}[tc.proto]
		if !ok || v.VlanId != tc.id || int(v.VlanProtocol) != want {
			t.Errorf("eth1.v is %+v, want id %d protocol %s", link(t, e, "eth1.v"), tc.id, tc.proto)
		}
	}
}

// TestVRFThroughNetworkManager: a VRF with eth1 as port, eth1 keeping its
// address, a route through eth1 in the VRF's table; then the table
// changed (NetworkManager cannot change it live: taken down first).
func TestVRFThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1")
	b, touchUps := e.openCounting(t)
	for _, table := range []int{100, 101} {
		applyFixedPoint(t, e, b, touchUps, fmt.Sprintf(`
interfaces:
- {name: vrf0, type: vrf, state: up, vrf: {port: [eth1], route-table-id: %d}}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.251, prefix-length: 24}]}}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth1, table-id: %d}
`, table, table))
		v, ok := link(t, e, "vrf0").(*netlink.Vrf)
		if !ok || int(v.Table) != table || link(t, e, "eth1").Attrs().MasterIndex != v.Attrs().Index {
			t.Errorf("vrf0 is %+v, want table %d with eth1", link(t, e, "vrf0"), table)
		}
		routes, err := e.ns.Netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range routes {
			if r.Dst != nil && r.Dst.String() == "198.51.100.0/24" && r.Gw.String() == "192.0.2.1" {
				found = true
			}
		}
		if !found {
			t.Errorf("table %d has no route 198.51.100.0/24 via 192.0.2.1: %v", table, routes)
		}
	}
}

// TestDummyThroughNetworkManager: a dummy with addresses of both
// families and an MTU, then removed.
func TestDummyThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1")
	b, touchUps := e.openCounting(t)
	applyFixedPoint(t, e, b, touchUps, `
interfaces:
- name: dummy0
  type: dummy
  state: up
  mtu: 1280
  ipv4: {enabled: true, address: [{ip: 192.0.2.20, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: 2001:db8::20, prefix-length: 64}]}
`)
	if l := link(t, e, "dummy0"); l.Type() != "dummy" || l.Attrs().MTU != 1280 {
		t.Errorf("dummy0 is %+v", l)
	}
	applyFixedPoint(t, e, b, touchUps, "interfaces:\n- {name: dummy0, type: dummy, state: absent}\n")
	if _, err := e.ns.Netlink.LinkByName("dummy0"); err == nil {
		t.Errorf("dummy0 still exists")
	}
}

// TestBridgeVLANFilteringThroughNetworkManager: a bridge with a trunk
// port (ranges and a native VLAN) and an access port; then the default
// PVID changed (its ports are taken down first). NetworkManager 1.42
// leaves the bridge's default PVID on every port it attaches
// (nm-device-bridge.c attach_port: "no need to flush"), so a port whose
// PVID is another VLAN keeps the default one untagged as well: the kernel
// touch-up may remove it (only that), and the ports' VLANs end exact.
func TestBridgeVLANFilteringThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b, touchUps := e.openCounting(t)
	for _, pvid := range []int{1, 5} {
		applyFixedPointAllowing(t, e, b, touchUps, fmt.Sprintf(`
interfaces:
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}, vlan-protocol: 802.1q, vlan-default-pvid: %d}
    port:
    - name: eth1
      vlan: {mode: trunk, enable-native: true, tag: 100, trunk-tags: [{id: 101}, {id-range: {min: 200, max: 209}}]}
    - name: eth2
      vlan: {mode: access, tag: 300}
`, pvid), regexp.MustCompile(`^bridge vlan set eth[12] master br0 `))
		vlans, err := e.ns.Netlink.BridgeVlanList()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for idx, vs := range vlans {
			l, err := e.ns.Netlink.LinkByIndex(int(idx))
			if err != nil {
				continue
			}
			for _, v := range vs {
				s := fmt.Sprint(v.Vid)
				if v.PortVID() {
					s += " pvid"
				}
				if v.EngressUntag() {
					s += " untagged"
				}
				got[l.Attrs().Name] = append(got[l.Attrs().Name], s)
			}
		}
		want := []string{"100 pvid untagged", "101"}
		for v := 200; v <= 209; v++ {
			want = append(want, fmt.Sprint(v))
		}
		if diff := cmp.Diff(want, got["eth1"]); diff != "" {
			t.Errorf("eth1 VLANs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"300 pvid untagged"}, got["eth2"]); diff != "" {
			t.Errorf("eth2 VLANs (-want +got):\n%s", diff)
		}
	}
}

// TestRollbackBondVLANThroughCheckpoint: a bond + VLAN apply left pending
// while the probe runs and then rolled back (the probe failed) through
// NetworkManager's checkpoint leaves profiles, devices and addresses
// exactly as before, and no checkpoint.
func TestRollbackBondVLANThroughCheckpoint(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b := e.open(t, false)
	ctx := context.Background()
	before := e.snapshot(t)
	if _, err := apply.Apply(ctx, b, decode(t, bondVLANState), apply.Options{StateDir: e.stateDir, NoCommit: true, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if e.snapshot(t) == before {
		t.Fatal("apply changed nothing")
	}
	if _, err := apply.Rollback(ctx, b, e.stateDir); err != nil {
		t.Fatal(err)
	}
	var last string
	// The rollback waits for the devices NetworkManager rolled back; the
	// bond and VLAN it removes may take a moment longer to leave.
	if !waitFor(10*time.Second, func() bool { last = e.snapshot(t); return last == before }) {
		t.Errorf("after rollback (-before +after):\n%s", cmp.Diff(before, last))
	}
	if cps, err := b.Checkpoints(); err != nil || len(cps) != 0 {
		t.Errorf("NetworkManager checkpoints left: %v (%v)", cps, err)
	}
}

// TestGeneratedKeyfilesLoadAndActivate: the keyfiles `nmstatectl gc`
// writes for a bond with a VLAN, a VLAN on ethernet and a VRF load into
// NetworkManager (`nmcli connection load`), activate, and give the state
// they were generated from (planning it again is empty).
func TestGeneratedKeyfilesLoadAndActivate(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		up          []string
	}{
		{"bond-vlan", bondVLANState, []string{"bond0", "bond0.101"}},
		{"vlan", `
interfaces:
- {name: eth1.30, type: vlan, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.30, prefix-length: 24}]}, vlan: {base-iface: eth1, id: 30, protocol: 802.1ad}}
`, []string{"eth1.30"}},
		{"vrf", `
interfaces:
- {name: vrf0, type: vrf, state: up, vrf: {port: [eth1], route-table-id: 100}}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.251, prefix-length: 24}]}}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth1, table-id: 100}
`, []string{"vrf0", "eth1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newNICEnv(t, "eth1", "eth2")
			ctx := context.Background()
			desired := decode(t, tc.state)
			files, err := nm.GenerateKeyfiles(desired)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				path := filepath.Join(e.nm.KeyfileDir, f.Name)
				if err := os.WriteFile(path, f.Data, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "connection", "load", path); err != nil {
					t.Fatalf("loading %s: %v: %s\n%s", f.Name, err, out, f.Data)
				}
			}
			for _, id := range tc.up {
				if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "--wait", "30", "connection", "up", id); err != nil {
					t.Fatalf("activating %s: %v: %s", id, err, out)
				}
			}
			b := e.open(t, false)
			var diff string
			settled := waitFor(20*time.Second, func() bool {
				cur, err := b.Show(ctx)
				if err != nil {
					diff = err.Error()
					return false
				}
				m, err := nmstate.Merge(desired.Clone(), cur)
				if err != nil {
					diff = err.Error()
					return false
				}
				p, err := nmstate.PlanChanges(m)
				if err != nil {
					diff = err.Error()
					return false
				}
				diff = p.String()
				return p.Empty()
			})
			if !settled {
				out, _ := nmrun.Nmcli(ctx, e.nm.Bus, "-t", "-f", "NAME,DEVICE,STATE", "connection", "show")
				t.Errorf("the node is not the state the keyfiles came from; plan:\n%s\nprofiles:\n%s", diff, strings.TrimSpace(out))
			}
		})
	}
}

// procCPU is a process's user+system CPU time from /proc/PID/stat.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command (which may hold spaces) in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	// USER_HZ is 100 on Linux.
	return time.Duration(ut+st) * (time.Second / 100)
}

// selfCPU is this process's and its waited-for children's CPU time (nmcli).
func selfCPU() (self, children time.Duration) {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return self, children
}
