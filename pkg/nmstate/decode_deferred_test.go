package nmstate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func isTemplate(s string) bool { return strings.Contains(s, "{{") }

func TestDecodeDeferred(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		want      *nmstate.State
		deferred  []nmstate.Deferred
		wantError string
	}{{
		name: "names keep the text, other values stay unset",
		doc:  `{"interfaces":[{"name":"{{ a }}","type":"ethernet","state":"up","mtu":"{{ b }}","ipv4":"{{ c }}","mac-address":"{{ d }}"}]}`,
		want: statetest.State(statetest.Interfaces(statetest.Ethernet("{{ a }}"))),
		deferred: []nmstate.Deferred{
			{Path: "interfaces[0].name", Value: "{{ a }}"},
			{Path: "interfaces[0].mtu", Value: "{{ b }}"},
			{Path: "interfaces[0].ipv4", Value: "{{ c }}"},
			{Path: "interfaces[0].mac-address", Value: "{{ d }}"},
		},
	}, {
		name: "an enumeration gives its choices",
		doc:  `{"interfaces":[{"name":"eth1","type":"ethernet","state":"{{ s }}"}]}`,
		want: statetest.State(statetest.Interfaces(statetest.Iface("eth1", nmstate.TypeEthernet, statetest.StateOf("")))),
		deferred: []nmstate.Deferred{
			{Path: "interfaces[0].state", Value: "{{ s }}", Choices: []string{"up", "down", "absent", "ignore", "unknown"}},
		},
	}, {
		name:     "a whole list",
		doc:      `{"interfaces":"{{ i }}"}`,
		want:     &nmstate.State{},
		deferred: []nmstate.Deferred{{Path: "interfaces", Value: "{{ i }}"}},
	}, {
		name: "a deferred type accepts an OVS bridge section",
		doc:  `{"interfaces":[{"name":"br0","type":"{{ t }}","bridge":{"allow-extra-patch-ports":true}}]}`,
		want: statetest.State(statetest.Interfaces(statetest.Iface("br0", "", statetest.StateOf(""), statetest.With(func(i *nmstate.Interface) {
			i.OVSBridge = &nmstate.OVSBridge{AllowExtraPatchPorts: statetest.Ptr(true)}
		})))),
		deferred: []nmstate.Deferred{{Path: "interfaces[0].type", Value: "{{ t }}", Choices: typeChoices()}},
	}, {
		name:      "the rest stays strict",
		doc:       `{"interfaces":[{"name":"{{ a }}","type":"ethernet","mtu":"x"}]}`,
		wantError: `interfaces[0].mtu: "x" is not an integer`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st, deferred, err := nmstate.DecodeDeferred([]byte(tc.doc), isTemplate)
			if tc.wantError != "" {
				if err == nil || err.Error() != tc.wantError {
					t.Fatalf("error = %v, want %s", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, st, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.deferred, deferred, cmpopts.SortSlices(func(a, b nmstate.Deferred) bool { return a.Path < b.Path })); diff != "" {
				t.Errorf("deferred (-want +got):\n%s", diff)
			}
		})
	}
}

func typeChoices() []string {
	_, deferred, _ := nmstate.DecodeDeferred([]byte(`{"interfaces":[{"name":"x","type":"{{ t }}"}]}`), isTemplate)
	return deferred[0].Choices
}
