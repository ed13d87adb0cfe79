package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
)

// Garbage is one enactment to delete, with the UID it must still have (a
// delete precondition, so that an enactment recreated under the same name
// in the meantime survives).
type Garbage struct {
	Name   string
	UID    types.UID
	Reason string
}

// GCDecision lists the enactments of a policy to delete.
type GCDecision struct {
	Delete []Garbage
	// RequeueAfter, when non-zero, is when an enactment too young to be
	// collected now reaches Config.GCGrace.
	RequeueAfter time.Duration
}

// Collect decides which enactments labelled with the policy are garbage:
// those whose policy is gone, or belongs to an older policy of the same name
// (the enactment is older than the policy, or is owned by a policy with
// another UID), or whose node is gone or no longer matches the selector.
// Enactments younger than Config.GCGrace are kept and revisited later.
// Nodes without a handler keep their enactments: the handler may be
// restarting.
func Collect(in Input) GCDecision {
	v := newView(in)
	var d GCDecision
	var next time.Time
	for _, e := range v.enactments {
		reason := garbageReason(v, e.CreationTimestamp.Time, e.OwnerReferences, nodeOf(e))
		if reason == "" {
			continue
		}
		ripe := e.CreationTimestamp.Add(in.Config.GCGrace)
		if in.Now.Before(ripe) {
			if next.IsZero() || ripe.Before(next) {
				next = ripe
			}
			continue
		}
		d.Delete = append(d.Delete, Garbage{Name: e.Name, UID: e.UID, Reason: reason})
	}
	if !next.IsZero() {
		d.RequeueAfter = next.Sub(in.Now)
	}
	return d
}

func garbageReason(v view, created time.Time, owners []metav1.OwnerReference, node string) string {
	p := v.in.Policy
	if p == nil {
		return "policyDeleted"
	}
	if created.Before(p.CreationTimestamp.Time) {
		return "olderThanPolicy"
	}
	for _, o := range owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err == nil && gv.Group == nmstatev1.GroupVersion.Group && o.Kind == "NodeNetworkConfigurationPolicy" && o.UID != p.UID {
			return "ownedByOtherPolicy"
		}
	}
	n, ok := v.nodes[node]
	if !ok {
		return "nodeDeleted"
	}
	if !n.matches {
		return "nodeNotMatching"
	}
	return ""
}
