package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/knmstate/knmstate/internal/extension"
)

func TestPool(t *testing.T) {
	pool := annotated(extension.PoolAnnotation, "198.51.100.64/30 br1")
	for _, tc := range []struct {
		name   string
		policy policyOpt
		record string
		want   PoolDecision
	}{
		{name: "no pool", policy: annotated("x", "y")},
		{name: "first assignment, pool full at the third node", policy: pool,
			want: PoolDecision{Record: "node1=198.51.100.65,node2=198.51.100.66", Write: true, Full: []string{"node3"}}},
		{name: "recorded: kept, nothing to write", policy: pool, record: "node1=198.51.100.65,node2=198.51.100.66",
			want: PoolDecision{Record: "node1=198.51.100.65,node2=198.51.100.66", Full: []string{"node3"}}},
		{name: "a gone node keeps its address", policy: pool, record: "node1=198.51.100.65,node9=198.51.100.66",
			want: PoolDecision{Record: "node1=198.51.100.65,node9=198.51.100.66", Full: []string{"node2", "node3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(tc.policy)
			if tc.record != "" {
				p.Annotations[extension.PoolAddressesAnnotation] = tc.record
			}
			got := Pool(Input{PolicyName: "policy1", Policy: p, Nodes: nodes(3), Handlers: handlers(3), Now: t0, Config: DefaultConfig})
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Pool (-want +got):\n%s", diff)
			}
		})
	}
}
