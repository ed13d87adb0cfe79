package manifest

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReaderName is the ClusterRole that lets every reader of a cluster read
// knmstate's objects.
const ReaderName = "knmstate-reader"

// Reader is read access to policies, enactments, node network states and
// NMStates, aggregated into the built-in view, edit and admin roles and
// OpenShift's cluster-reader, so a user who may look at the cluster may
// look at its node networking. Nothing is aggregated for writing: a
// policy changes nodes, which is a cluster administrator's decision
// (upstream, too, ships a reader role only).
func Reader(p Params) []client.Object {
	p = p.withDefaults()
	meta := p.clusterMeta(ReaderName, "rbac")
	for _, to := range []string{"view", "edit", "admin", "cluster-reader"} {
		meta.Labels["rbac.authorization.k8s.io/aggregate-to-"+to] = "true"
	}
	return []client.Object{&rbacv1.ClusterRole{
		ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"nmstate.io"},
			Resources: []string{"nodenetworkconfigurationpolicies", "nodenetworkconfigurationenactments", "nodenetworkstates", "nmstates"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}}
}
