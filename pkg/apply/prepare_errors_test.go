package apply

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// The plan and the revert state are computed side by side; a failure of
// either still aborts before the checkpoint and the first change, and a
// failed plan is reported first, as when the plan came first.
func TestPlanAndRevertFailuresChangeNothing(t *testing.T) {
	errPlan, errRevert := errors.New("plan failed"), errors.New("revert failed")
	tests := []struct {
		name              string
		planErr, revErr   error
		want              string
		wantIs, wantIsNot error
	}{
		{"plan fails", errPlan, nil, "plan failed", errPlan, nil},
		{"revert fails", nil, errRevert, "computing the revert state: revert failed", errRevert, nil},
		{"both fail: the plan's error", errPlan, errRevert, "plan failed", errPlan, errRevert},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode(st.Ethernet("eth1"))
			o := testOptions(t)
			plan, revert := o.engine.plan, o.engine.revert
			o.engine.plan = func(m *nmstate.Merged) (*nmstate.Plan, error) {
				p, err := plan(m)
				if tc.planErr != nil {
					return nil, tc.planErr
				}
				return p, err
			}
			o.engine.revert = func(before, desired *nmstate.State) (*nmstate.State, error) {
				r, err := revert(before, desired)
				if tc.revErr != nil {
					return nil, tc.revErr
				}
				return r, err
			}
			_, err := Apply(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0"))), o)
			if err == nil {
				t.Fatal("Apply succeeded")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tc.wantIs) || (tc.wantIsNot != nil && errors.Is(err, tc.wantIsNot)) {
				t.Errorf("error %v: wrong cause", err)
			}
			if node.ops != 0 {
				t.Errorf("executed %v", node.executed)
			}
			assertNoCheckpoint(t, o.StateDir)
			entries, err := os.ReadDir(o.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != lockFile {
					t.Errorf("state directory holds %s", e.Name())
				}
			}
		})
	}
}
