package nm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestProfileMACsec: the macsec setting as nmstate's NetworkManager plugin
// writes it (golden), and what it refuses, with the interface's path.
func TestProfileMACsec(t *testing.T) {
	for _, tc := range []struct {
		name, macsec string
		want, err    string
	}{{
		name:   "example, port 0 left to NetworkManager's default",
		macsec: "{encrypt: true, base-iface: eth1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550, port: 0, validation: strict, send-sci: true}",
		want: `macsec.encrypt true
macsec.mka-cak "50b71a8ef0bd5751ea76de6d6c98c03a"
macsec.mka-ckn "f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550"
macsec.mode 0
macsec.parent "eth1"
macsec.send-sci true
macsec.validation 2
`,
	}, {
		name:   "port, no encryption, check, offload off",
		macsec: "{encrypt: false, base-iface: eth1, port: 7, validation: check, send-sci: false, offload: off}",
		want: `macsec.encrypt false
macsec.mode 0
macsec.parent "eth1"
macsec.port 7
macsec.send-sci false
macsec.validation 1
`,
	}, {
		name:   "offload needs NetworkManager 1.46",
		macsec: "{base-iface: eth1, offload: phy}",
		err:    "interfaces[name=macsec0]: macsec.offload: offload phy needs NetworkManager's macsec.offload (added in 1.46)",
	}, {
		name:   "no base",
		macsec: "{port: 1}",
		err:    "interfaces[name=macsec0]: macsec.base-iface: a macsec interface needs a base interface",
	}, {
		name:   "port past 65534",
		macsec: "{base-iface: eth1, port: 65535}",
		err:    "interfaces[name=macsec0]: macsec.port: port 65535 is not in 1..65534",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			y := "interfaces:\n- {name: eth1, type: ethernet, state: up}\n- {name: macsec0, type: macsec, state: up, macsec: " + tc.macsec + "}\n"
			if tc.err != "" {
				st, err := nmstate.Decode([]byte(y))
				if err != nil {
					t.Fatal(err)
				}
				_, err = Profile(ProfileInput{Iface: &st.Interfaces[len(st.Interfaces)-1], UUID: "u"})
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			s := planFor(t, y)["macsec0"]
			if s == nil {
				t.Fatal("no profile for macsec0")
			}
			if got := s["connection"]["type"].Value(); got != "macsec" {
				t.Errorf("connection.type %v, want macsec", got)
			}
			if diff := cmp.Diff(tc.want, flatten(s, "macsec")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
