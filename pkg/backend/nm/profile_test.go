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
