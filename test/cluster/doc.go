// Package cluster holds the acceptance tests of the node handler and the
// cluster controller (issue 7), run against a real local cluster: the lab
// (internal/testbed/lab) with its kube-apiserver, controller and one `knmstate
// handler` process per node, each node a network namespace with eth0 on
// DHCP and eth1, eth2 as unconfigured veth NICs.
//
// The tests talk to the API with client-go (no kubectl: test/e2e does the
// kubectl-driven walk through the examples) and look at the nodes' network
// through netlink in their namespaces. They own only the labs they start
// (named after the test process) and never touch this machine's network.
//
// They run in `make test` (go test ./test/cluster/, about 2.5 minutes).
//
// -args -suite.knmstate=PATH runs the lab with a prebuilt knmstate binary
// instead of building cmd/knmstate. Closing-note figures are logged as
// lines starting with FIGURE (run with -v).
package cluster
