package dhcp

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClientID4(t *testing.T) {
	mac := net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	iaid := IAID("eth0")
	for _, tc := range []struct {
		value   string
		want    []byte
		wantErr string
	}{
		{"", []byte{1, 0x52, 0x54, 0, 0x12, 0x34, 0x56}, ""},
		{"ll", []byte{1, 0x52, 0x54, 0, 0x12, 0x34, 0x56}, ""},
		{"iaid+duid", append(append([]byte{0xff}, iaid[:]...), 0, 3, 0, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56), ""},
		{"01:aa:bb", []byte{1, 0xaa, 0xbb}, ""},
		{"node-1", append([]byte{0}, "node-1"...), ""},
		{"a:b", append([]byte{0}, "a:b"...), ""},
	} {
		t.Run(tc.value, func(t *testing.T) {
			got, err := ClientID4(tc.value, "eth0", mac)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("client id (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ClientID4("ll", "eth0", nil); err == nil || err.Error() != `dhcp-client-id "ll": interface eth0 has no hardware address` {
		t.Errorf("ll without MAC: error %v", err)
	}
}

func TestDUID(t *testing.T) {
	mac := net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	got, err := DUID("", "eth0", mac)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{0, 3, 0, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56}, got); diff != "" {
		t.Errorf("duid-ll (-want +got):\n%s", diff)
	}
	if _, err := DUID("uuid", "eth0", mac); err == nil || err.Error() != `dhcp-duid "uuid": want "ll" or colon-separated hex bytes` {
		t.Errorf("bad duid: error %v", err)
	}
	if a, b := IAID("eth0"), IAID("eth1"); a == b {
		t.Errorf("IAID(eth0) == IAID(eth1) == %x", a)
	}
}
