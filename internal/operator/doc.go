// Package operator is `knmstate operator`: it watches NMState objects
// (nmstate.io/v1; v1beta1 is served too) with kubernetes-nmstate's
// semantics — the oldest one counts and any other is deleted; its status
// has Available, Progressing and Degraded with upstream's reasons; deleting
// it removes every operand — and deploys, by server-side apply, the typed
// objects of internal/manifest: RBAC, admission policies, network
// policies, the handler DaemonSet, the controller and webhook Deployments
// and their Services, each owned by the NMState. Until an NMState exists
// the operator is its own Deployment and nothing else runs.
//
// It writes nothing when nothing changed: a steady cluster costs no API
// writes (conditions are compared without their heartbeat times, and
// applies happen only on NMState or workload changes).
package operator
