// Package openshiftcrd holds the OpenShift CRDs that knmstate's OpenShift
// mode reads and writes (config.openshift.io's ClusterOperator,
// Infrastructure, APIServer, ClusterVersion; console.openshift.io's
// ConsolePlugin; operator.openshift.io's Console), for labs and tests that
// play OpenShift. The files are copies of the github.com/openshift/api
// module's generated CRD manifests (the version go.mod requires); a test
// keeps them identical.
package openshiftcrd

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var files embed.FS

// ModuleDirs are where the copied files live in the openshift/api
// module, by API group.
var ModuleDirs = map[string]string{
	"config.openshift.io":   "config/v1/zz_generated.crd-manifests",
	"console.openshift.io":  "console/v1/zz_generated.crd-manifests",
	"operator.openshift.io": "operator/v1/zz_generated.crd-manifests",
}

// Files are the CRD files by name.
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	names, err := fs.Glob(files, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out[n[len("crds/"):]] = b
	}
	return out, nil
}

// CRDs are the CRDs as typed objects, in file-name order.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	fm, err := Files()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(fm))
	for n := range fm {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, n := range names {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(fm[n], crd); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
