// Package manifest builds, as typed Kubernetes objects, everything knmstate
// installs: the operands an NMState object asks for (RBAC, the handler
// DaemonSet, the controller and webhook Deployments, Services, webhook
// configurations, admission policies, network policies) and the operator
// bundle (CRDs, the operator's RBAC and Deployment). It is the one source:
// the operator applies these objects, and `go run ./hack/manifests` writes
// them as the YAML of deploy/ and the templates of the Helm chart, which
// tests keep from going stale.
//
// It is pure: values in (Params), objects out. It never talks to an API
// server and decides nothing about what exists in a cluster.
package manifest
