package metrics

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

// Gauge describes one of kubernetes-nmstate's gauges: computed from API
// objects, never incremented.
type Gauge struct {
	Name, Help string
	// Labels are the label names, in the order of Sample.Labels.
	Labels []string
}

// Desc is the gauge's descriptor, for a collector's Describe and Collect.
func (g Gauge) Desc() *prometheus.Desc {
	return prometheus.NewDesc(g.Name, g.Help, g.Labels, nil)
}

// kubernetes-nmstate's gauges (reference §5), with its names, help texts
// and labels. The controller's leader serves them.
var (
	FeaturesApplied = Gauge{
		Name:   "kubernetes_nmstate_features_applied",
		Help:   "Number of nmstate features applied labeled by its name",
		Labels: []string{"name"},
	}
	NetworkInterfaces = Gauge{
		Name:   "kubernetes_nmstate_network_interfaces",
		Help:   "Number of network interfaces labeled by its type",
		Labels: []string{"type", "node"},
	}
	NetworkRoutes = Gauge{
		Name:   "kubernetes_nmstate_routes",
		Help:   "Number of network routes labeled by node, IP stack and type (static/dynamic)",
		Labels: []string{"node", "ip_stack", "type"},
	}
	PoliciesStatus = Gauge{
		Name:   "kubernetes_nmstate_policies_status",
		Help:   "Number of NodeNetworkConfigurationPolicies labeled by their status condition",
		Labels: []string{"status"},
	}
	EnactmentsStatus = Gauge{
		Name:   "kubernetes_nmstate_enactments_status",
		Help:   "Number of NodeNetworkConfigurationEnactments labeled by node and status condition",
		Labels: []string{"node", "status"},
	}
)

// UpstreamGauges lists the five gauges.
func UpstreamGauges() []Gauge {
	return []Gauge{FeaturesApplied, NetworkInterfaces, NetworkRoutes, PoliciesStatus, EnactmentsStatus}
}

// Sample is one series of a gauge: its label values, in the order of the
// gauge's Labels, and its value.
type Sample struct {
	Labels []string
	Value  float64
}

// sortSamples orders samples by their label values, so results compare
// and print the same every time; no samples is nil.
func sortSamples(s []Sample) []Sample {
	if len(s) == 0 {
		return nil
	}
	slices.SortFunc(s, func(a, b Sample) int {
		return slices.Compare(a.Labels, b.Labels)
	})
	return s
}

// activeCondition is the type of the first True condition in list order,
// or "" (kubernetes-nmstate's rule; the handler and the controller write
// the types in a fixed order, so "first" is stable).
func activeCondition(l shared.ConditionList) shared.ConditionType {
	for _, c := range l {
		if c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// FeaturesAppliedSamples is kubernetes_nmstate_features_applied: 1 for
// every feature named by the status of any enactment (presence, not a
// count); a feature no enactment names has no series.
func FeaturesAppliedSamples(enactments []v1beta1.NodeNetworkConfigurationEnactment) []Sample {
	seen := map[string]bool{}
	var out []Sample
	for _, e := range enactments {
		for _, f := range e.Status.Features {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, Sample{Labels: []string{f}, Value: 1})
			}
		}
	}
	return sortSamples(out)
}

// PoliciesStatusSamples is kubernetes_nmstate_policies_status: the number
// of policies whose first True condition is each of the four policy
// condition types; all four are always present.
func PoliciesStatusSamples(policies []nmstatev1.NodeNetworkConfigurationPolicy) []Sample {
	counts := map[shared.ConditionType]float64{}
	for _, p := range policies {
		counts[activeCondition(p.Status.Conditions)]++
	}
	out := make([]Sample, 0, len(shared.NodeNetworkConfigurationPolicyConditionTypes))
	for _, t := range shared.NodeNetworkConfigurationPolicyConditionTypes {
		out = append(out, Sample{Labels: []string{string(t)}, Value: counts[t]})
	}
	return sortSamples(out)
}

// EnactmentsStatusSamples is kubernetes_nmstate_enactments_status: for
// every node that has enactments (by their nmstate.io/node label), the
// number of them whose first True condition is each of the five enactment
// condition types; a node without enactments has no series.
func EnactmentsStatusSamples(enactments []v1beta1.NodeNetworkConfigurationEnactment) []Sample {
	type key struct {
		node   string
		status shared.ConditionType
	}
	nodes := map[string]bool{}
	counts := map[key]float64{}
	for _, e := range enactments {
		node := e.Labels[shared.EnactmentNodeLabel]
		if node == "" {
			continue
		}
		nodes[node] = true
		counts[key{node, activeCondition(e.Status.Conditions)}]++
	}
	out := make([]Sample, 0, len(nodes)*len(shared.NodeNetworkConfigurationEnactmentConditionTypes))
	for node := range nodes {
		for _, t := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
			out = append(out, Sample{Labels: []string{node, string(t)}, Value: counts[key{node, t}]})
		}
	}
	return sortSamples(out)
}

// NetworkInterfacesSamples is kubernetes_nmstate_network_interfaces: per
// node (the NodeNetworkState's name), the number of interfaces of each
// type in its current state.
func NetworkInterfacesSamples(node string, s StateSummary) []Sample {
	counts := map[string]float64{}
	for _, t := range s.InterfaceTypes {
		if t != "" {
			counts[t]++
		}
	}
	out := make([]Sample, 0, len(counts))
	for t, n := range counts {
		out = append(out, Sample{Labels: []string{t, node}, Value: n})
	}
	return sortSamples(out)
}

// NetworkRoutesSamples is kubernetes_nmstate_routes: per node, the number
// of running routes by IP stack (ipv6 when the destination has a colon)
// and type (static when a configured route has the same destination, else
// dynamic).
func NetworkRoutesSamples(node string, s StateSummary) []Sample {
	static := map[string]bool{}
	for _, d := range s.ConfigRoutes {
		static[d] = true
	}
	type key struct{ stack, kind string }
	counts := map[key]float64{}
	for _, d := range s.RunningRoutes {
		k := key{"ipv4", "dynamic"}
		if strings.Contains(d, ":") {
			k.stack = "ipv6"
		}
		if static[d] {
			k.kind = "static"
		}
		counts[k]++
	}
	out := make([]Sample, 0, len(counts))
	for k, n := range counts {
		out = append(out, Sample{Labels: []string{node, k.stack, k.kind}, Value: n})
	}
	return sortSamples(out)
}
