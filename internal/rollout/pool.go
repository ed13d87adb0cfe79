package rollout

import (
	"slices"

	"github.com/knmstate/knmstate/internal/extension"
)

// PoolDecision is the address pool record (knmstate.io/ipv4-pool) a policy
// must carry.
type PoolDecision struct {
	// Record is the new value of extension.PoolAddressesAnnotation; Write
	// says it differs from the policy's.
	Record string
	Write  bool
	// Full are the nodes left without an address: the pool is exhausted.
	Full []string
}

// Pool assigns an address of the policy's pool to every node it selects
// that has none yet, in node-name order; assigned addresses never change,
// even when their node goes (so they are never given to another node).
func Pool(in Input) PoolDecision {
	p := in.Policy
	if p == nil || p.DeletionTimestamp != nil {
		return PoolDecision{}
	}
	s, errs := extension.Parse(p.Annotations)
	if len(errs) > 0 || s.Pool == nil {
		return PoolDecision{}
	}
	v := newView(in)
	var names []string
	for name, n := range v.nodes {
		if n.matches {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	full := s.Pool.Assign(names)
	rec := s.Pool.Record()
	return PoolDecision{Record: rec, Write: rec != p.Annotations[extension.PoolAddressesAnnotation], Full: full}
}
