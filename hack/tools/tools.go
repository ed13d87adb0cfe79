//go:build tools

// Package tools records the binaries `make setup` builds from pinned modules.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
