package nm

import (
	"strings"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestProfileIPMethod: nmstate's IP settings become NetworkManager's
// ipv4/ipv6 method as upstream maps them.
func TestProfileIPMethod(t *testing.T) {
	for _, tc := range []struct {
		name, ip     string
		want4, want6 string
	}{
		{"nothing", "", "disabled", "disabled"},
		{"disabled", "ipv4: {enabled: false}\n  ipv6: {enabled: false}", "disabled", "disabled"},
		{"static", "ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}\n  ipv6: {enabled: true, address: [{ip: 2001:db8::1, prefix-length: 64}]}", "manual", "manual"},
		{"enabled without addresses", "ipv4: {enabled: true}\n  ipv6: {enabled: true}", "disabled", "link-local"},
		{"dhcp", "ipv4: {enabled: true, dhcp: true}\n  ipv6: {enabled: true, dhcp: true, autoconf: false}", "auto", "dhcp"},
		{"autoconf", "ipv6: {enabled: true, dhcp: true, autoconf: true}", "disabled", "auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := nmstate.Decode([]byte("interfaces:\n- name: eth1\n  type: ethernet\n  " + tc.ip + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Profile(ProfileInput{Iface: &st.Interfaces[0], UUID: "u", Existing: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := s["ipv4"]["method"].Value(); got != tc.want4 {
				t.Errorf("ipv4.method %v, want %s", got, tc.want4)
			}
			if got := s["ipv6"]["method"].Value(); got != tc.want6 {
				t.Errorf("ipv6.method %v, want %s", got, tc.want6)
			}
		})
	}
}

// TestProfileRefusesWhatItCannotExpress: types without a mapping fail with
// the interface's path and a NotSupported reason, before anything changes.
func TestProfileRefusesWhatItCannotExpress(t *testing.T) {
	st, err := nmstate.Decode([]byte("interfaces:\n- name: t0\n  type: team\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Profile(ProfileInput{Iface: &st.Interfaces[0], UUID: "u"})
	if err == nil || !strings.Contains(err.Error(), "interfaces[name=t0]") || !strings.Contains(err.Error(), "does not create team interfaces") {
		t.Errorf("got %v", err)
	}
}

// TestProfileEthtoolFeatureNMLacks: a feature NetworkManager has no
// property for is refused when it would change, and passed over when the
// kernel already has the value (a state read back from the node, as a
// rollback's revert applies it, lists every feature the kernel reports).
func TestProfileEthtoolFeatureNMLacks(t *testing.T) {
	desired := func(v bool) *nmstate.Interface {
		return &nmstate.Interface{Name: "eth1", Type: nmstate.TypeEthernet, State: nmstate.StateUp,
			Ethtool: &nmstate.Ethtool{Feature: map[string]bool{"tx-tcp-accecn-segmentation": v, "rx-gro": false}}}
	}
	for _, c := range []struct {
		name      string
		current   *nmstate.Interface
		wantError bool
	}{
		{"no current interface", nil, true},
		{"the kernel has another value", desired(false), true},
		{"the kernel has it already", desired(true), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := desired(true)
			s, err := Profile(ProfileInput{Iface: d, Desired: d, Current: c.current, UUID: "u", Existing: true})
			switch {
			case c.wantError && (err == nil || !strings.Contains(err.Error(), "ethtool.feature.tx-tcp-accecn-segmentation")):
				t.Fatalf("got %v, want a refusal naming ethtool.feature.tx-tcp-accecn-segmentation", err)
			case !c.wantError && err != nil:
				t.Fatal(err)
			case !c.wantError:
				if v, _ := s["ethtool"]["feature-gro"].Value().(bool); v || s["ethtool"]["feature-gro"].Value() == nil {
					t.Errorf("feature-gro = %v, want false", s["ethtool"]["feature-gro"])
				}
				if _, ok := s["ethtool"]["feature-tx-tcp-accecn-segmentation"]; ok {
					t.Error("the feature NetworkManager lacks went into the profile")
				}
			}
		})
	}
}
