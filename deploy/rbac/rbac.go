// Package rbac embeds the ServiceAccounts, roles and bindings of knmstate's
// controller and handler (least privilege, no wildcards), and the admission
// policy that keeps the rollout permit annotations the controller's alone,
// for installers (the operator, the lab) and for tests that run components
// under these exact identities. It must not hold logic beyond listing the
// documents.
package rbac

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
)

//go:embed *.yaml
var files embed.FS

// Namespace is the namespace of the ServiceAccounts and namespaced roles.
const Namespace = "nmstate"

// ServiceAccount names, as RBAC subjects and user names.
const (
	ControllerServiceAccount = "knmstate-controller"
	HandlerServiceAccount    = "knmstate-handler"
)

// UserName returns the user name a ServiceAccount authenticates as.
func UserName(serviceAccount string) string {
	return "system:serviceaccount:" + Namespace + ":" + serviceAccount
}

// Groups returns the groups a ServiceAccount of Namespace belongs to.
func Groups() []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + Namespace, "system:authenticated"}
}

// Manifests returns the manifests (multi-document YAML), sorted by file name.
func Manifests() ([][]byte, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list rbac manifests: %w", err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "kustomization.yaml" })
	sort.Strings(names)
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		out = append(out, b)
	}
	return out, nil
}
