// Package ui serves knmstate's web views (package web's bundle) and
// forwards their API calls to the Kubernetes API server with the user's
// own kubeconfig credentials, so RBAC decides what each user sees and
// changes. It owns the guard in front of those credentials: a random
// token (the URL it prints), a Host check (DNS rebinding) and an Origin
// check (another page in the same browser). It must not act on the API by
// itself: every request it forwards is one the views made.
package ui
