package extension

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPoolAssign(t *testing.T) {
	s, errs := Parse(map[string]string{PoolAnnotation: "198.51.100.64/30 br1", PoolAddressesAnnotation: "node02=198.51.100.65"})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := s.Pool
	// /30: two node addresses, .65 and .66; node02 keeps its own.
	full := p.Assign([]string{"node01", "node02", "node03"})
	if diff := cmp.Diff([]string{"node03"}, full); diff != "" {
		t.Errorf("nodes left without an address (-want +got):\n%s", diff)
	}
	if got := p.Record(); got != "node01=198.51.100.66,node02=198.51.100.65" {
		t.Errorf("Record = %q", got)
	}
	// Assigning again changes nothing.
	p.Assign([]string{"node03", "node02", "node01"})
	if got := p.Record(); got != "node01=198.51.100.66,node02=198.51.100.65" {
		t.Errorf("Record after a second Assign = %q", got)
	}
}

func TestPoolErrors(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{PoolAnnotation: "2001:db8::/64 br1"}, `expected "CIDR IFACE"`},
		{map[string]string{PoolAnnotation: "198.51.100.64/31 br1"}, "holds no address for a node"},
		{map[string]string{PoolAnnotation: "198.51.100.64/26"}, "no interface named"},
		{map[string]string{PoolAnnotation: "198.51.100.64/26 br1", PoolAddressesAnnotation: "a=198.51.100.65,b=198.51.100.65"}, "198.51.100.65 is a's already"},
		{map[string]string{PoolAnnotation: "198.51.100.64/26 br1", PoolAddressesAnnotation: "a=198.51.100.64"}, "is not a node address of 198.51.100.64/26"},
		{map[string]string{PoolAddressesAnnotation: "a=198.51.100.65"}, "which the policy does not have"},
	} {
		_, errs := Parse(tc.ann)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("Parse(%v) = %v, want one error containing %q", tc.ann, errs, tc.want)
		}
	}
}

func TestFillPool(t *testing.T) {
	p := &Pool{Prefix: netip.MustParsePrefix("198.51.100.64/26"), Iface: "br1"}
	doc := map[string]any{"interfaces": []any{
		map[string]any{"name": "eth1"},
		map[string]any{"name": "br1", "ipv4": map[string]any{"address": []any{map[string]any{"ip": "10.0.0.1", "prefix-length": int64(8)}}}},
	}}
	got, err := FillPool(doc, p, netip.MustParseAddr("198.51.100.66"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"interfaces": []any{
		map[string]any{"name": "eth1"},
		map[string]any{"name": "br1", "ipv4": map[string]any{"enabled": true, "address": []any{
			map[string]any{"ip": "10.0.0.1", "prefix-length": int64(8)},
			map[string]any{"ip": "198.51.100.66", "prefix-length": int64(26)},
		}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FillPool (-want +got):\n%s", diff)
	}
	if _, ok := doc["interfaces"].([]any)[1].(map[string]any)["ipv4"].(map[string]any)["enabled"]; ok {
		t.Error("FillPool modified its input")
	}
	if _, err := FillPool(map[string]any{"interfaces": []any{}}, p, netip.MustParseAddr("198.51.100.66")); err == nil {
		t.Error("FillPool without the pool's interface: no error")
	}
}
