// Package e2e is knmstate's end-to-end suite: one `knmstate lab` (a real
// etcd and kube-apiserver, the controller, a handler and a node runtime per
// node, nodes as network namespaces on a virtual switch) for the whole run,
// driven the way a user drives a cluster: this machine's kubectl
// (/usr/bin/kubectl) applies the policies in the repository's examples/ and
// waits for their conditions, and `knmstate lab exec` looks inside the nodes
// to check that the kernel really carries what the policy asked for.
//
// Every example has one expected outcome (examples_linux_test.go): Available
// with the configuration on the nodes, or Degraded with an enactment message
// that names the kernel feature this machine lacks (bonding, 802.1q, vrf,
// bridge VLAN filtering, Open vSwitch). A policy that breaks the default
// gateway must be rolled back by the handler's probes, and `lab down` must
// leave nothing behind.
//
// Built with -tags qemu (make test-kernel) the suite runs on a lab whose
// nodes are in a qemu guest on Debian's kernel (lab up --kernel debian):
// the examples that are Degraded here are then Available with their
// configuration checked in the nodes (ip -d link, bridge vlan, ip route
// show table), and the tests of the *_qemu_test.go files (bonds, VLANs,
// bridge VLAN filtering, the primary NIC under a bond) run too.
//
// It owns only its lab (named e2e-PID, directory under the temp dir) and
// must not touch anything else on the machine.
package e2e
