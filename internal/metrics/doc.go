// Package metrics owns what knmstate exports to Prometheus: the names, help
// texts, types and labels of every metric, the pure functions that compute
// kubernetes-nmstate's five gauges from API objects, and registration into a
// prometheus.Registerer (controller-runtime's metrics.Registry in the
// binaries, so one endpoint serves ours and controller-runtime's).
//
// Naming: kubernetes-nmstate's gauges keep their names and labels
// (kubernetes_nmstate_*), so its dashboards and recording rules work
// unchanged. Everything knmstate adds is named knmstate_<component>_*
// (handler, controller, operator): the prefix says who defines the
// metric, and a future upstream metric can never collide with one of ours.
// Counters end in _total, durations are histograms in seconds ending in
// _seconds (promlint clean, TestLint). Label values are bounded sets
// (outcomes, reasons, probe names, node names); never a policy name.
//
// It must not talk to the API server, serve HTTP or keep objects: callers
// gather the objects (the controller from its cache) and record events
// (the handler, the controller, the operator) through the types here.
package metrics
