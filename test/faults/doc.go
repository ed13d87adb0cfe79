// The suite needs the images of make images and a kubelet lab: it is
// compiled only with -tags kubelet (make test-faults).

//go:build kubelet

// Package faults is the fault suite (docs/reliability.md): one 5-node
// kubelet-mode lab, and for each case two policies rolled out to every
// node with maxUnavailable 2 (one that succeeds, one that must roll back
// on two nodes) while a fault hits at a chosen moment: the API server or
// etcd down, the controller's leader, a handler or a whole node killed, a
// node cut off from the API server; and a burst of 200 policies. A
// watcher records every enactment and policy change and every apply on
// every node (the handlers' container logs), and each case checks that
// nothing was applied twice, that maxUnavailable held, that every policy
// ended telling the truth and every node shows either the policy or the
// state before it. It needs `make setup build images` and root.
package faults
