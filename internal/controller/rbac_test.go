package controller

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/deploy/rbac"
	"github.com/knmstate/knmstate/internal/rollout"
)

// TestRBAC asks the real authorizer, with deploy/rbac installed, what each
// component may do: what it needs, and not the other component's writes.
func TestRBAC(t *testing.T) {
	c := getCluster(t)
	ctrlUser, handlerUser := rbac.UserName(rbac.ControllerServiceAccount), rbac.UserName(rbac.HandlerServiceAccount)
	const nm = "nmstate.io"
	tests := []struct {
		user                                        string
		verb, group, resource, sub, namespace, name string
		allowed                                     bool
	}{
		// The controller: policy status yes, policy spec no.
		{ctrlUser, "update", nm, "nodenetworkconfigurationpolicies", "status", "", "p", true},
		{ctrlUser, "patch", nm, "nodenetworkconfigurationpolicies", "status", "", "p", true},
		{ctrlUser, "watch", nm, "nodenetworkconfigurationpolicies", "", "", "", true},
		{ctrlUser, "update", nm, "nodenetworkconfigurationpolicies", "", "", "p", false},
		{ctrlUser, "delete", nm, "nodenetworkconfigurationpolicies", "", "", "p", false},
		// Enactments: permits (patch) and GC (delete), never status or create.
		{ctrlUser, "patch", nm, "nodenetworkconfigurationenactments", "", "", "n.p", true},
		{ctrlUser, "delete", nm, "nodenetworkconfigurationenactments", "", "", "n.p", true},
		{ctrlUser, "list", nm, "nodenetworkconfigurationenactments", "", "", "", true},
		{ctrlUser, "create", nm, "nodenetworkconfigurationenactments", "", "", "", false},
		{ctrlUser, "update", nm, "nodenetworkconfigurationenactments", "status", "", "n.p", false},
		{ctrlUser, "patch", nm, "nodenetworkconfigurationenactments", "status", "", "n.p", false},
		{ctrlUser, "list", nm, "nodenetworkstates", "", "", "", true},
		{ctrlUser, "create", nm, "nodenetworkstates", "", "", "", false},
		{ctrlUser, "list", "", "nodes", "", "", "", true},
		{ctrlUser, "patch", "", "nodes", "", "", "n", false},
		// Its Lease and nothing else.
		{ctrlUser, "get", "coordination.k8s.io", "leases", "", "nmstate", "knmstate-controller", true},
		{ctrlUser, "update", "coordination.k8s.io", "leases", "", "nmstate", "knmstate-controller", true},
		{ctrlUser, "create", "coordination.k8s.io", "leases", "", "nmstate", "", true},
		{ctrlUser, "update", "coordination.k8s.io", "leases", "", "nmstate", "someone-else", false},
		{ctrlUser, "update", "coordination.k8s.io", "leases", "", "kube-system", "knmstate-controller", false},
		{ctrlUser, "list", "", "secrets", "", "nmstate", "", false},
		// The handler: enactments and node network states, never policy
		// status or leases.
		{handlerUser, "create", nm, "nodenetworkconfigurationenactments", "", "", "", true},
		{handlerUser, "update", nm, "nodenetworkconfigurationenactments", "status", "", "n.p", true},
		{handlerUser, "patch", nm, "nodenetworkconfigurationenactments", "status", "", "n.p", true},
		{handlerUser, "delete", nm, "nodenetworkconfigurationenactments", "", "", "n.p", true},
		{handlerUser, "create", nm, "nodenetworkstates", "", "", "", true},
		{handlerUser, "update", nm, "nodenetworkstates", "status", "", "n", true},
		{handlerUser, "watch", nm, "nodenetworkconfigurationpolicies", "", "", "", true},
		{handlerUser, "update", nm, "nodenetworkconfigurationpolicies", "status", "", "p", false},
		{handlerUser, "patch", nm, "nodenetworkconfigurationpolicies", "", "", "p", false},
		{handlerUser, "create", "", "events", "", "default", "", true},
		{handlerUser, "create", "", "events", "", "kube-system", "", false},
		{handlerUser, "get", "", "nodes", "", "", "n", true},
		{handlerUser, "update", "", "nodes", "", "", "n", false},
		{handlerUser, "create", "coordination.k8s.io", "leases", "", "nmstate", "", false},
		{handlerUser, "list", "", "secrets", "", "nmstate", "", false},
		// Both check who scrapes their metrics endpoint.
		{ctrlUser, "create", "authentication.k8s.io", "tokenreviews", "", "", "", true},
		{ctrlUser, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", true},
		{handlerUser, "create", "authentication.k8s.io", "tokenreviews", "", "", "", true},
		{handlerUser, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", "", true},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s %s %s/%s/%s %s/%s", tt.user, tt.verb, tt.group, tt.resource, tt.sub, tt.namespace, tt.name)
		t.Run(name, func(t *testing.T) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   tt.user,
				Groups: rbac.Groups(),
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tt.verb, Group: tt.group, Resource: tt.resource, Subresource: tt.sub,
					Namespace: tt.namespace, Name: tt.name,
				},
			}}
			if err := c.admin.Create(t.Context(), sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tt.allowed {
				t.Errorf("allowed = %v, want %v (%s)", sar.Status.Allowed, tt.allowed, sar.Status.Reason)
			}
		})
	}
}

// TestRBACHasNoWildcards checks every rule of deploy/rbac names its groups,
// resources and verbs.
func TestRBACHasNoWildcards(t *testing.T) {
	docs, err := rbac.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	roles := 0
	for _, doc := range docs {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(doc)))
		for {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var role struct {
				Kind     string
				Metadata struct{ Name string }
				Rules    []rbacv1.PolicyRule
			}
			if err := yaml.Unmarshal(raw, &role); err != nil {
				t.Fatal(err)
			}
			if role.Kind != "Role" && role.Kind != "ClusterRole" {
				continue
			}
			roles++
			for i, rule := range role.Rules {
				for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
					for _, v := range list {
						if v == "*" || bytes.ContainsRune([]byte(v), '*') {
							t.Errorf("%s %s rules[%d]: wildcard %q", role.Kind, role.Metadata.Name, i, v)
						}
					}
				}
				if len(rule.Verbs) == 0 || len(rule.Resources) == 0 && len(rule.NonResourceURLs) == 0 {
					t.Errorf("%s %s rules[%d]: no verbs or resources", role.Kind, role.Metadata.Name, i)
				}
			}
		}
	}
	if roles != 8 {
		t.Errorf("%d roles in deploy/rbac, want 8 (controller, its leader election, handler, its events, its node lock, the reader, metrics auth and metrics reader)", roles)
	}
}

// TestHandlerCannotGrantItselfAPermit checks the admission guard of
// deploy/rbac: a handler may patch its enactment's metadata, but not the
// rollout annotations.
func TestHandlerCannotGrantItselfAPermit(t *testing.T) {
	f := newFixture(t, "guard")
	nodes := f.nodes(1)
	p := f.policy("p", nil)
	name := shared.EnactmentName(nodes[0], p.Name)
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{shared.EnactmentPolicyLabel: p.Name, shared.EnactmentNodeLabel: nodes[0]},
	}}
	if err := f.c.handlerOf(nodes[0]).Create(f.ctx, e); err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, key, value string) error {
		b := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
		return c.Patch(f.ctx, &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, b))
	}
	// The policy takes a moment to load after its creation.
	eventually(t, "handler denied the permit annotation", func() (bool, string) {
		err := patch(f.c.handlerOf(nodes[0]), rollout.PermitAnnotation, "1")
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), fmt.Sprintf("patch error %v", err)
	})
	err := patch(f.c.handlerOf(nodes[0]), rollout.AbortAnnotation, "1")
	if want := "nmstate.io/rollout-permit and nmstate.io/rollout-abort are written by the knmstate controller only, not by " + rbac.UserName(rbac.HandlerServiceAccount); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("abort annotation by the handler: %v, want an error containing %q", err, want)
	}
	if err := patch(f.c.handlerOf(nodes[0]), "example.com/other", "x"); err != nil {
		t.Errorf("other annotation by the handler: %v", err)
	}
	ctrlCfg, _ := getCluster(t).controllerConfig(t, "knmstate-controller-guard")
	ctrl, err := client.New(ctrlCfg, client.Options{Scheme: f.c.admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := patch(ctrl, rollout.PermitAnnotation, "1"); err != nil {
		t.Errorf("permit annotation by the controller: %v", err)
	}
	// The handler keeps the controller's annotations when it changes its
	// own: allowed.
	if err := patch(f.c.handlerOf(nodes[0]), "example.com/other", "y"); err != nil {
		t.Errorf("other annotation by the handler after a permit: %v", err)
	}
}
