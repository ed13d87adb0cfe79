// Package bench measures the kernel engine against iproute2 doing the same
// kernel work in the same run: apply latency of generated states (the
// 50-interface state, 1,000 bridges) versus `ip -batch`, and Show of a
// namespace with 1,000 links and 2,000 routes versus `ip -j link/addr/route
// show`; and the OVS backend: 50 OVS bridges with an internal interface and
// an address each versus one ovs-vsctl transaction + `ip -batch`, and their
// Show versus `ovs-vsctl show` + `ip -j addr` (each node its own Open
// vSwitch from internal/testbed/ovsrun). Each run gets a fresh network namespace; results are per-run
// durations, medians and the ratio ours/iproute2. The Go benchmarks of this
// package and the `knmstate bench` command both call it.
//
// Wall time on a shared machine is noisy; each run also records CPU time
// (this process for knmstate, the ip processes for iproute2), the steadier
// figure. Each timed run waits Options.Settle first, and namespaces are
// emptied with one grouped link deletion before removal, so the kernel's
// background teardown of one run does not land in the next.
//
// From the shell: go test ./internal/testbed/bench -run '^$' -bench Compare
// -benchtime 9x (9 runs per side; -bench 'Compare/apply50' for one),
// and -bench ApplyPhases -benchtime 1x -v for where an apply's time goes.
//
// It creates, uses and removes its own named namespaces (prefix "knmb-")
// only; it never changes the caller's namespace. It asserts nothing about
// timing: callers judge the numbers.
package bench
