// Package consoleplugin serves knmstate's OpenShift console plugin (the
// web views built with the console's SDK, package web/plugin) over TLS to
// the console's bridge, with the serving certificate the service CA keeps
// in a mounted Secret. It owns only that static file server: the plugin's
// Kubernetes objects are internal/manifest's, the operator deploys them.
package consoleplugin
