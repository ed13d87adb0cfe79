package apply

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// A record whose states would not decode again is refused before anything
// is stored, naming the first bad state in record order; the state
// directory is left as it was (the temporary file, written while the
// states were checked, is removed).
func TestWriteCheckpointRefusesUnreadableRecord(t *testing.T) {
	bad := func() *nmstate.State {
		// Encodes fine, but the decoder accepts only known types.
		return &nmstate.State{Interfaces: []nmstate.Interface{{Name: "eth1", Type: "bogus"}}}
	}
	good := st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500))))
	tests := []struct {
		name                   string
		before, desired, rvert *nmstate.State
		want                   string
	}{
		{"desired", good, bad(), good, "checkpoint c1 would not be readable: desired state: "},
		{"first in record order", bad(), good, bad(), "checkpoint c1 would not be readable: before state: "},
		{"revert", good, good, bad(), "checkpoint c1 would not be readable: revert state: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := &Checkpoint{ID: "c1", Created: t0, Deadline: t0.Add(time.Minute), Before: tc.before, Desired: tc.desired, Revert: tc.rvert}
			err := writeCheckpoint(dir, rec)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("writeCheckpoint error %v, want one starting %q", err, tc.want)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, e := range entries {
				files = append(files, e.Name())
			}
			if diff := cmp.Diff([]string(nil), files); diff != "" {
				t.Errorf("state directory (-want +got):\n%s", diff)
			}
			// encodeRecord, which the writer replaced, refuses alike.
			if _, err := rec.encodeRecord(true); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("encodeRecord error %v, want one starting %q", err, tc.want)
			}
		})
	}
}
