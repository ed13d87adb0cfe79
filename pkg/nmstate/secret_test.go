package nmstate_test

import (
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
