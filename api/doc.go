// Package api is the root of knmstate's Kubernetes API (group nmstate.io).
// The Go types live in api/shared (types both versions use), api/v1 and
// api/v1beta1; this package holds only the tests that check the API as a real
// kube-apiserver serves it (CRD schema, CEL, admission policy, printer
// columns) and that the generated files are up to date. It must not hold
// behaviour: controllers and handlers live under internal/.
package api
