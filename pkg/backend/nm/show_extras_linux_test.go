package nm

import (
	"encoding/json"
	"testing"

	"github.com/godbus/dbus/v5"
)

// TestLLDPNeighborConversion: NetworkManager's LldpNeighbors
// entries become nmstate's TLV lists in the order and shape nmstate's
// NetworkManager plugin gives them (the TLVs lldpd sends by default are
// covered against a real lldpd in TestLLDPNeighboursFromNetworkManager).
func TestLLDPNeighborConversion(t *testing.T) {
	v := dbus.MakeVariant
	nm := []map[string]dbus.Variant{{
		"chassis-id-type": v(uint32(4)), "chassis-id": v("00:11:22:33:44:55"),
		"port-id-type": v(uint32(5)), "port-id": v("swp1"),
		"system-name": v("sw"), "system-capabilities": v(uint32(0x14)),
		"ieee-802-1-vlans":          v([]map[string]dbus.Variant{{"vid": v(uint32(100)), "name": v("v100")}}),
		"ieee-802-1-ppvids":         v([]map[string]dbus.Variant{{"ppvid": v(uint32(7)), "flags": v(uint32(1))}}),
		"ieee-802-3-mac-phy-conf":   v(map[string]dbus.Variant{"autoneg": v(uint32(1)), "pmd-autoneg-cap": v(uint32(32768)), "operational-mau-type": v(uint32(16))}),
		"ieee-802-3-max-frame-size": v(uint32(1522)),
		"management-addresses": v([]map[string]dbus.Variant{
			{"address-subtype": v(uint32(1)), "address": v([]byte{192, 0, 2, 1}), "interface-number-subtype": v(uint32(2)), "interface-number": v(uint32(3))},
			{"address-subtype": v(uint32(6)), "address": v([]byte{0, 0x11, 0x22, 0x33, 0x44, 0x55}), "interface-number-subtype": v(uint32(2)), "interface-number": v(uint32(3))},
		}),
	}}
	got, err := json.Marshal(lldpNeighbors(nm))
	if err != nil {
		t.Fatal(err)
	}
	want := `[[{"system-name":"sw","type":5},` +
		`{"system-capabilities":["MAC Bridge component","Router"],"type":7},` +
		`{"_description":"MAC address","chassis-id":"00:11:22:33:44:55","chassis-id-type":4,"type":1},` +
		`{"_description":"Interface name","port-id":"swp1","port-id-type":5,"type":2},` +
		`{"ieee-802-1-vlans":[{"name":"v100","vid":100}],"oui":"00:80:c2","subtype":3,"type":127},` +
		`{"ieee-802-3-mac-phy-conf":{"autoneg":true,"operational-mau-type":16,"pmd-autoneg-cap":32768},"oui":"00:12:0f","subtype":1,"type":127},` +
		`{"ieee-802-1-ppvids":[7],"oui":"00:80:c2","subtype":2,"type":127},` +
		`{"management-addresses":[{"address":"192.0.2.1","address-subtype":"IPv4","interface-number":3,"interface-number-subtype":2},` +
		`{"address":"00:11:22:33:44:55","address-subtype":"MAC","interface-number":3,"interface-number-subtype":2}],"type":8},` +
		`{"ieee-802-3-max-frame-size":1522,"oui":"00:12:0f","subtype":4,"type":127}]]`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
