package nmstate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// bigState is the shape of upstream's scale test: N VLANs on eth1, each the
// port of its own linux bridge holding a static address.
func bigState(n int) []byte {
	var b strings.Builder
	b.WriteString("interfaces:\n- {name: eth1, type: ethernet, state: up}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- {name: eth1.%d, type: vlan, state: up, vlan: {base-iface: eth1, id: %d}}\n", i+1, i+1)
		fmt.Fprintf(&b, "- name: br%d\n  type: linux-bridge\n  state: up\n  bridge: {options: {stp: {enabled: false}}, port: [{name: eth1.%d}]}\n", i+1, i+1)
		fmt.Fprintf(&b, "  ipv4: {enabled: true, dhcp: false, address: [{ip: 10.%d.%d.1, prefix-length: 24}]}\n", (i/256)%256, i%256)
	}
	return []byte(b.String())
}

func BenchmarkDecodeValidateEncode1000(b *testing.B) {
	data := bigState(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		s, err := nmstate.Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		if errs := nmstate.Validate(s, nil); len(errs) > 0 {
			b.Fatal(errs)
		}
		if _, err := nmstate.EncodeYAML(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode1000(b *testing.B) {
	data := bigState(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := nmstate.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeJSON1000 is the encoding behind apply's checkpoint
// (compact) and the NodeNetworkState report (indented).
func BenchmarkEncodeJSON1000(b *testing.B) {
	s, err := nmstate.Decode(bigState(1000))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nmstate.AppendCompactJSON(nil, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("indented", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nmstate.EncodeJSON(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
