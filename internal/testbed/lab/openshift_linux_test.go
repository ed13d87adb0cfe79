package lab

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/knmstate/knmstate/internal/manifest"
)

// PayloadObjects substitutes the lab's images for the payload's, as the
// release tooling does: the operator's image in its container, the console
// plugin's in the operator's flag; no plugin image leaves the flag empty
// (the operator then deploys no plugin).
func TestPayloadObjectsImages(t *testing.T) {
	for _, tc := range []struct {
		name, plugin, wantFlag string
	}{
		{name: "plugin image served", plugin: "10.0.0.1:5000/knmstate-console-plugin@sha256:1", wantFlag: "--console-plugin-image=10.0.0.1:5000/knmstate-console-plugin@sha256:1"},
		{name: "no plugin image", plugin: "", wantFlag: "--console-plugin-image="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, skipped, err := PayloadObjects("10.0.0.1:5000/knmstate@sha256:0", tc.plugin, []string{"--probe-dns-host=api"})
			if err != nil {
				t.Fatal(err)
			}
			if len(skipped) > 0 {
				t.Errorf("the lab's CVO leaves out %v", skipped)
			}
			var op *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "Deployment" && o.GetName() == manifest.OperatorName {
					op = o
				}
			}
			if op == nil {
				t.Fatal("no operator Deployment in the payload")
			}
			cs, _, _ := unstructured.NestedSlice(op.Object, "spec", "template", "spec", "containers")
			c := cs[0].(map[string]any)
			var args []string
			for _, a := range c["args"].([]any) {
				args = append(args, a.(string))
			}
			if c["image"] != "10.0.0.1:5000/knmstate@sha256:0" {
				t.Errorf("operator image %v", c["image"])
			}
			if !slices.Contains(args, tc.wantFlag) || !slices.Contains(args, "--handler-arg=--probe-dns-host=api") {
				t.Errorf("operator args %v: want %s and the handler argument", args, tc.wantFlag)
			}
			for _, a := range args {
				if a == "--console-plugin-image="+manifest.OpenShiftConsolePluginImage {
					t.Errorf("the payload's plugin image left in %v", args)
				}
			}
		})
	}
}
