//go:build !qemu

package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestIEEE8021XGuardedPortNetworkManager is TestIEEE8021XGuardedPort
// through the NetworkManager backend, whose NetworkManager runs its own
// wpa_supplicant (on the private bus): the 802.1x scenarios of the table
// (Scenario.NMBy) need an authenticator, since NetworkManager activates a
// wired 802.1X profile only once authenticated (802-1x.optional false,
// as nmstate leaves it). So a wrong secret is an apply that fails (the
// activation does) and is rolled back, unlike on the kernel backend,
// where the supplicant is left trying: the port stays closed and eth1
// keeps no 802.1x profile (NetworkManager gives up on the EAP failure
// after about a minute, so only PEAP tries a wrong secret). The example,
// unmodified for PEAP, then opens the port.
func TestIEEE8021XGuardedPortNetworkManager(t *testing.T) {
	for _, c := range []struct {
		name, file   string
		wrong, right string
	}{
		{"peap", "eth1_with_ieee_802_1x_peap.yml", "password: wrong-password\n", "password: password\n"},
		{"tls", "eth1_with_ieee_802_1x.yml", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			n := newNMNodeWith(t, nmrun.Options{Supplicant: true})
			n.ns.AddrAdd(t, "eth1", "192.0.2.1/24")
			n.peer.AddrAdd(t, "sw-eth1", "192.0.2.2/24")
			listenInPeer(t, n, "192.0.2.2:7777")
			a := guardedPort(t, n)
			example := strings.ReplaceAll(string(readExample(t, c.file)), "/etc/pki/802-1x-test", a.dir)
			if c.wrong != "" {
				wrongSecretRolledBack(ctx, t, n, a, example, c.file, c.wrong, c.right)
			}
			applyState(ctx, t, n, example)
			a.waitEvent(t, "AP-STA-CONNECTED")
			if !reaches(t, n, "192.0.2.2:7777") {
				t.Fatalf("authenticated, but the port passes no traffic; events:\n%s", a.events())
			}
		})
	}
}

// wrongSecretRolledBack applies example with right replaced by wrong:
// the apply fails, its rollback does not, the port stays closed and eth1
// has no 802.1x section.
func wrongSecretRolledBack(ctx context.Context, t *testing.T, n *node, a *authenticator, example, file, wrong, right string) {
	t.Helper()
	bad := strings.Replace(example, right, wrong, 1)
	if bad == example {
		t.Fatalf("%s has no %q to spoil", file, right)
	}
	desired, err := nmstate.Decode([]byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	switch _, err := apply.Apply(ctx, n.backend, desired, n.options()); {
	case err == nil:
		t.Fatal("an apply with a wrong secret succeeded: NetworkManager should not activate the profile")
	case strings.Contains(err.Error(), "rollback"):
		t.Fatalf("the wrong secret's apply failed and so did its rollback: %v", err)
	default:
		t.Logf("the wrong secret's apply failed, as it should: %v", err)
	}
	if strings.Contains(a.events(), "AP-STA-CONNECTED") || reaches(t, n, "192.0.2.2:7777") {
		t.Fatalf("a wrong secret opened the port; events:\n%s", a.events())
	}
	cur, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ifc := cur.Find("eth1"); len(ifc) == 0 || ifc[0].IEEE8021X != nil {
		t.Fatalf("after the rolled-back apply eth1 is %+v, want it without an 802.1x section", ifc)
	}
}
