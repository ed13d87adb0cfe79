//go:build linux && !qemu

// This machine's kernel lacks bonding, 8021q, vrf and bridge VLAN
// filtering (pkg/backend/kernel missing_linux_test.go asserts the kernel
// backend's errors for them): through NetworkManager the same states
// fail with the same error, naming the kernel module, and leave the node
// as it was. The qemu lane's kernel has them (nm_types_qemu_test.go).

package nm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func TestMissingKernelFeatureThroughNetworkManager(t *testing.T) {
	for _, tc := range []struct {
		name, state, want string
	}{
		{"bonding", "interfaces:\n- {name: bond0, type: bond, state: up, link-aggregation: {mode: balance-rr, port: [eth1]}}\n",
			"bond0: kernel has no bonding support (module bonding)"},
		{"8021q", "interfaces:\n- {name: eth1.102, type: vlan, state: up, vlan: {base-iface: eth1, id: 102}}\n",
			"eth1.102: kernel has no 802.1q vlan support (module 8021q)"},
		{"vrf", "interfaces:\n- {name: vrf102, type: vrf, state: up, vrf: {route-table-id: 102, port: [eth1]}}\n",
			"vrf102: kernel has no vrf support (module vrf)"},
		{"bridge vlan filtering", "interfaces:\n- {name: br1, type: linux-bridge, state: up, bridge: {port: [{name: eth1, vlan: {mode: trunk, trunk-tags: [{id: 101}]}}]}}\n",
			"br1: kernel has no bridge vlan filtering support (CONFIG_BRIDGE_VLAN_FILTERING)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			b := e.open(t, false)
			before, err := b.Show(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = apply.Apply(ctx, b, decode(t, tc.state), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond})
			if err == nil {
				t.Fatal("applied; this kernel has the feature, the test belongs to the qemu lane")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if k := nmstate.KindOf(err); k != nmstate.Dependency {
				t.Errorf("kind %v, want Dependency (%v)", k, err)
			}
			after, err := b.Show(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ifaceNames(after), ifaceNames(before); got != want {
				t.Errorf("interfaces after the failed apply %s, before %s", got, want)
			}
			out, err := nmrun.Nmcli(ctx, e.nm.Bus, "-g", "NAME", "connection", "show")
			if err != nil {
				t.Fatalf("nmcli connection show: %v: %s", err, out)
			}
			if strings.Contains(out, "bond0") || strings.Contains(out, "eth1.102") || strings.Contains(out, "vrf102") || strings.Contains(out, "br1") {
				t.Errorf("a profile of the failed apply is left:\n%s", out)
			}
		})
	}
}

func ifaceNames(s *nmstate.State) string {
	var names []string
	for _, i := range s.Interfaces {
		names = append(names, i.Name)
	}
	return strings.Join(names, ",")
}
