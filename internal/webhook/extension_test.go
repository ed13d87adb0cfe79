package webhook_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/extension"
)

// The knmstate.io annotations (docs/extensions.md) through the real API
// server: refused with the annotation's path and the reason on create and
// on an update that changes them; admitted when valid; an update that
// leaves them alone is not validated.
func TestExtensionAnnotations(t *testing.T) {
	f := start(t, "extension", certs.Config{})
	ctx := t.Context()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string // "" for admitted
	}{
		{"dry run", map[string]string{extension.DryRunAnnotation: "true"}, ""},
		{"probes", map[string]string{extension.ProbesAnnotation: "dns=off,ping.timeout=90s"}, ""},
		{"dry run: bad value", map[string]string{extension.DryRunAnnotation: "yes"},
			`metadata.annotations[knmstate.io/dry-run]: Invalid value: "yes": must be "true" or "false"`},
		{"probes: unknown probe", map[string]string{extension.ProbesAnnotation: "gateway=off"},
			`metadata.annotations[knmstate.io/probes]: Invalid value: "gateway=off": unknown probe "gateway": one of ping, dns, api-server, node-readiness`},
		{"misspelt annotation", map[string]string{"knmstate.io/dryrun": "true"},
			`metadata.annotations[knmstate.io/dryrun]: Unsupported value: "knmstate.io/dryrun"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy("ext-"+strings.NewReplacer(" ", "-", ":", "").Replace(tc.name), ethernet("eth1"))
			p.Annotations = tc.annotations
			err := f.admin.Create(ctx, p)
			if err == nil {
				t.Cleanup(func() { _ = f.admin.Delete(context.Background(), p) })
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), denied+tc.want) {
				t.Fatalf("create: %v\nwant Invalid containing:\n%s", err, denied+tc.want)
			}
		})
	}

	p := policy("ext-update", ethernet("eth1"))
	if err := f.admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.admin.Delete(context.Background(), p) })
	p.Annotations = map[string]string{extension.ProbesAnnotation: "dns.timeout=0s"}
	want := denied + `metadata.annotations[knmstate.io/probes]: Invalid value: "dns.timeout=0s": dns.timeout: must be more than 0s and at most 10m0s`
	if err := f.admin.Update(ctx, p); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("update adding a bad annotation: %v\nwant Invalid containing:\n%s", err, want)
	}
	if err := f.admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{extension.ProbesAnnotation: "dns=off", "example.com/note": "x"}
	if err := f.admin.Update(ctx, p); err != nil {
		t.Fatalf("update to valid annotations refused: %v", err)
	}
	p.Annotations["example.com/note"] = "y"
	if err := f.admin.Update(ctx, p); err != nil {
		t.Fatalf("update of another annotation refused: %v", err)
	}
}
