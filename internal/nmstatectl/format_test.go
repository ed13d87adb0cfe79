package nmstatectl

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatCanonicalises(t *testing.T) {
	in := "interfaces:\n- type: bond\n  name: bond0\n  link-aggregation: {ports: [eth1], mode: 1}\n"
	var out, errOut bytes.Buffer
	if err := runFormat(strings.NewReader(in), &out, &errOut, &formatOptions{file: "-"}); err != nil {
		t.Fatalf("runFormat: %v (stderr %q)", err, errOut.String())
	}
	want := "interfaces:\n  - name: bond0\n    type: bond\n    link-aggregation:\n      mode: active-backup\n      port:\n        - eth1\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	in := "interfaces:\n- name: v\n  type: vlan\n  vlan: {base-iface: eth1, id: 4095}\n- name: eth2\n  type: ethernet\n  mtu: 1000\n  ipv6: {enabled: true}\n"
	var errOut bytes.Buffer
	err := runValidate(strings.NewReader(in), &errOut, &validateOptions{file: "-"})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("got %v, want exit status 1", err)
	}
	want := "interfaces[0].vlan.id: 4095 is out of range 0..4094\n" +
		"interfaces[1].mtu: 1000 is too small: MTU should be >= 1280 when IPv6 is enabled\n"
	if diff := cmp.Diff(want, errOut.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	errOut.Reset()
	if err := runValidate(strings.NewReader("interfaces: []\n"), &errOut, &validateOptions{file: "-"}); err != nil || errOut.Len() != 0 {
		t.Errorf("valid input: err %v, stderr %q", err, errOut.String())
	}
}
