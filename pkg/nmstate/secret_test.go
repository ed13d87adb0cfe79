package nmstate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

func TestHideSecrets(t *testing.T) {
	in, err := nmstate.Decode([]byte(`
interfaces:
- name: eth1
  type: ethernet
  802.1x: {identity: user, eap-methods: [peap], password: pw, private-key-password: kpw, phase2-auth: mschapv2}
- name: macsec0
  type: macsec
  macsec: {base-iface: eth1, encrypt: true, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550}
- name: hosta_conn
  type: ipsec
  libreswan: {right: 192.0.2.250, psk: secret}
`))
	if err != nil {
		t.Fatal(err)
	}
	before := in.Clone()
	out := nmstate.HideSecrets(in)
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("HideSecrets changed its argument (-before +after):\n%s", diff)
	}
	h := nmstate.HiddenSecret
	got := []string{*out.Interfaces[0].IEEE8021X.Password, *out.Interfaces[0].IEEE8021X.PrivateKeyPassword,
		*out.Interfaces[1].MACsec.MKACAK, *out.Interfaces[2].Libreswan.PSK, *out.Interfaces[0].IEEE8021X.Identity}
	if diff := cmp.Diff([]string{h, h, h, h, "user"}, got); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
}

// TestHiddenSecretKeepsCurrent: a state copied from a shown one carries
// HiddenSecret for secrets; applying it keeps the current secret (no
// change planned, verification passes), as upstream does. A real new
// secret is still a change, and a hidden one without a current secret
// stays as given.
func TestHiddenSecretKeepsCurrent(t *testing.T) {
	current, err := nmstate.Decode([]byte(`interfaces:
- name: eth1
  type: ethernet
  state: up
  802.1x: {identity: client.example.org, eap-methods: [peap], password: s3cret}
- name: macsec0
  type: macsec
  state: up
  macsec: {base-iface: eth1, encrypt: true, port: 1, mka-cak: 50b71a8ef0bd5751ea76de6d6c98c03a, mka-ckn: f2b4297d39da7330910a74abc0449feb45b5c0b9fc23df1430e1898fcf1c4550}
`))
	if err != nil {
		t.Fatal(err)
	}
	shown := nmstate.HideSecrets(current)
	for _, c := range []struct {
		name    string
		desired *nmstate.State
		want    string // plan text, "" = empty
	}{
		{"shown state", shown, ""},
		{"new password", func() *nmstate.State {
			s := shown.Clone()
			p := "n3w"
			s.Interfaces[0].IEEE8021X.Password = &p
			return s
		}(), "link set eth1 type ethernet 802.1x.password <_password_hid_by_nmstate>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := nmstate.Merge(c.desired.Clone(), current)
			if err != nil {
				t.Fatal(err)
			}
			p, err := nmstate.PlanChanges(m)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(p.String()); got != c.want {
				t.Errorf("plan %q, want %q", got, c.want)
			}
			if c.want == "" {
				if err := nmstate.Verify(c.desired, current); err != nil {
					t.Errorf("verify of the shown state against the current one: %v", err)
				}
			}
		})
	}
	// A NIC given as ethernet that the kernel shows as a veth keeps its
	// secret too (nmstate unifies the two types).
	asVeth := current.Clone()
	asVeth.Interfaces[0].Type = nmstate.TypeVeth
	if err := nmstate.Verify(shown, asVeth); err != nil {
		t.Errorf("ethernet over a veth: %v", err)
	}
	// Nothing current to keep: the placeholder stays, and verification
	// says so.
	bare, err := nmstate.Decode([]byte("interfaces:\n- {name: eth1, type: ethernet, state: up}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nmstate.Verify(shown, bare); err == nil {
		t.Error("a hidden secret verified against an interface without 802.1x")
	}
}
