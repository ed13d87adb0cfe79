package kernel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVLANRuns(t *testing.T) {
	trunk := func(from, to uint16) []bridgeVLANEntry {
		var out []bridgeVLANEntry
		for id := from; id <= to; id++ {
			out = append(out, bridgeVLANEntry{vid: id})
		}
		return out
	}
	tests := []struct {
		name    string
		entries []bridgeVLANEntry
		want    []vlanRun
	}{
		{"none", nil, nil},
		{"default trunk: the PVID alone, then one range",
			append([]bridgeVLANEntry{{vid: 1, pvid: true, untagged: true}}, trunk(2, 4094)...),
			[]vlanRun{{from: 1, to: 1, pvid: true, untagged: true}, {from: 2, to: 4094}}},
		{"gaps split runs", append(trunk(100, 101), trunk(200, 202)...),
			[]vlanRun{{from: 100, to: 101}, {from: 200, to: 202}}},
		{"a PVID inside a range splits it",
			[]bridgeVLANEntry{{vid: 4}, {vid: 5, pvid: true, untagged: true}, {vid: 6}, {vid: 7}},
			[]vlanRun{{from: 4, to: 4}, {from: 5, to: 5, pvid: true, untagged: true}, {from: 6, to: 7}}},
		{"untagged and tagged differ", []bridgeVLANEntry{{vid: 10, untagged: true}, {vid: 11}},
			[]vlanRun{{from: 10, to: 10, untagged: true}, {from: 11, to: 11}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, vlanRuns(tt.entries), cmp.AllowUnexported(vlanRun{})); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
		})
	}
}
