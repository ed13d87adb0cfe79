// Package openshift tests knmstate as OpenShift would run it (issue 15):
// labs with real kubelets that play OpenShift (--openshift-platform), the
// payload of deploy/openshift applied as the Cluster Version Operator
// would, and the operator's platform gating, opt-out, opt-in and
// ClusterOperator. Build tag kubelet: make test-kubelet runs it with the
// images of make images.
package openshift
