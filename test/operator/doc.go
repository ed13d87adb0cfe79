// The suite needs the images of make images and a kubelet lab: it is
// compiled only with -tags kubelet (make test-kubelet).

//go:build kubelet

// Package operator is the operator's acceptance suite: a kubelet-mode lab
// with nothing of knmstate installed, then a user's path through it with
// the real kubectl and Helm — the bundle of deploy/operator and an NMState,
// policies, admission, node-scoped handler tokens, certificate rotation,
// steady-state API writes, an upgrade from version N to N+1, uninstall, and
// an install with the Helm chart. It needs `make setup build images` (the
// images the pods run) and root; `make test-kubelet` runs it.
package operator
