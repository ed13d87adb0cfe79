package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

type (
	policy    = nmstatev1.NodeNetworkConfigurationPolicy
	enactment = nmstatev1beta1.NodeNetworkConfigurationEnactment
)

// Enactment phases, as docs/rollout.md defines them from the conditions.
const (
	phaseAborted     = "Aborted"
	phaseAvailable   = "Available"
	phaseRetrying    = "Retrying"
	phaseFailed      = "Failed"
	phaseProgressing = "Progressing"
	phasePending     = "Pending"
	phaseUnknown     = "Unknown"
	phaseStale       = "Stale"
)

// readPolicy decodes a policy from testdata.
func readPolicy(t testing.TB, file string) *policy {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return decodePolicy(t, b)
}

// policyYAML builds a policy from its name, node selector and desired
// state (YAML).
func policyYAML(t testing.TB, name string, selector map[string]string, desired string) *policy {
	t.Helper()
	var sel strings.Builder
	if len(selector) > 0 {
		sel.WriteString("  nodeSelector:\n")
		for k, v := range selector {
			fmt.Fprintf(&sel, "    %q: %q\n", k, v)
		}
	}
	var ds strings.Builder
	for _, l := range strings.Split(strings.Trim(desired, "\n"), "\n") {
		ds.WriteString("    " + l + "\n")
	}
	doc := fmt.Sprintf("apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: %s\nspec:\n%s  desiredState:\n%s", name, sel.String(), ds.String())
	return decodePolicy(t, []byte(doc))
}

func decodePolicy(t testing.TB, b []byte) *policy {
	t.Helper()
	p := &policy{}
	if err := yaml.UnmarshalStrict(b, p); err != nil {
		t.Fatalf("decoding policy: %v\n%s", err, b)
	}
	return p
}

// adaptToLab rewrites what the lab cannot serve (see testdata/README.md):
// Internet name servers become the switch's dnsmasq. It logs every change.
func adaptToLab(t testing.TB, p *policy) {
	t.Helper()
	raw := p.Spec.DesiredState.Raw
	for from, to := range map[string]string{`"8.8.8.8"`: `"192.0.2.1"`, `"2001:4860:4860::8888"`: `"2001:db8::1"`} {
		if bytes.Contains(raw, []byte(from)) {
			t.Logf("adapted %s for the lab: %s -> %s", p.Name, from, to)
			raw = bytes.ReplaceAll(raw, []byte(from), []byte(to))
		}
	}
	p.Spec.DesiredState.Raw = raw
}

// create creates a policy and registers its deletion (and the wait for its
// enactments to go) for the end of the test.
func (c *cluster) create(t testing.TB, p *policy) {
	t.Helper()
	t.Cleanup(func() { c.deletePolicy(t, p.Name) })
	if err := c.c.Create(t.Context(), p); err != nil {
		t.Fatalf("create policy %s: %v", p.Name, err)
	}
}

// deletePolicy deletes a policy (if there) and waits until its enactments
// are gone.
func (c *cluster) deletePolicy(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.c.Delete(ctx, &policy{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete policy %s: %v", name, err)
		return
	}
	for {
		es, err := c.enactments(ctx, name)
		if err == nil && len(es) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Errorf("policy %s deleted, its enactments still there after 1m: %s (%v)", name, describe(es), err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enactments lists a policy's enactments (by the nmstate.io/policy label).
func (c *cluster) enactments(ctx context.Context, p string) ([]enactment, error) {
	var list nmstatev1beta1.NodeNetworkConfigurationEnactmentList
	if err := c.c.List(ctx, &list, client.MatchingLabels{shared.EnactmentPolicyLabel: p}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// getPolicy reads a policy.
func (c *cluster) getPolicy(t testing.TB, name string) *policy {
	t.Helper()
	p := &policy{}
	if err := c.c.Get(t.Context(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatalf("get policy %s: %v", name, err)
	}
	return p
}

// isTrue reports whether condition ty is True.
func isTrue(l shared.ConditionList, ty shared.ConditionType) bool {
	c := l.Find(ty)
	return c != nil && c.Status == corev1.ConditionTrue
}

// phaseOf is the enactment's phase for generation gen (docs/rollout.md).
func phaseOf(e *enactment, gen int64) string {
	if e.Status.PolicyGeneration != gen {
		return phaseStale
	}
	l := e.Status.Conditions
	switch {
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionAborted):
		return phaseAborted
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionAvailable):
		return phaseAvailable
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionFailing) && isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseRetrying
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionFailing):
		return phaseFailed
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseProgressing
	case isTrue(l, shared.NodeNetworkConfigurationEnactmentConditionPending):
		return phasePending
	}
	return phaseUnknown
}

// describe lists enactments with their phases and messages, for failures.
func describe(es []enactment) string {
	var b strings.Builder
	for i := range es {
		e := &es[i]
		fmt.Fprintf(&b, "\n  %s gen %d:", e.Name, e.Status.PolicyGeneration)
		for _, c := range e.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s(%s: %.200s)", c.Type, c.Reason, c.Message)
			}
		}
	}
	if b.Len() == 0 {
		return "no enactments"
	}
	return b.String()
}

// waitPolicy waits until the policy's condition ty is True and returns the
// policy; it polls every 50 ms (the resolution of the timings logged).
func (c *cluster) waitPolicy(t testing.TB, name string, ty shared.ConditionType, timeout time.Duration) *policy {
	t.Helper()
	var p *policy
	ended := false
	err := suite.Until(t.Context(), timeout, 50*time.Millisecond, func() error {
		p = &policy{}
		err := c.c.Get(t.Context(), types.NamespacedName{Name: name}, p)
		if err == nil && isTrue(p.Status.Conditions, ty) {
			return nil
		}
		// Waiting for Available on a policy whose rollout has ended
		// Degraded would only wait for the timeout.
		if err == nil && ty == shared.NodeNetworkConfigurationPolicyConditionAvailable &&
			isTrue(p.Status.Conditions, shared.NodeNetworkConfigurationPolicyConditionDegraded) {
			es, lerr := c.enactments(t.Context(), name)
			ended = lerr == nil && len(es) > 0
			for i := range es {
				if ph := phaseOf(&es[i], p.Generation); ph != phaseFailed && ph != phaseAborted && ph != phaseAvailable {
					ended = false
				}
			}
		}
		if ended {
			return nil
		}
		if err == nil {
			err = errors.New("not yet")
		}
		return err
	})
	if ended || err != nil {
		es, _ := c.enactments(t.Context(), name)
		var conds []string
		for _, c := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Message))
		}
		if ended {
			err = errors.New("its rollout ended")
		}
		t.Fatalf("policy %s not %s (%v): conditions %v; enactments:%s", name, ty, err, conds, describe(es))
	}
	return p
}

// waitEnactments waits until the policy's enactments are exactly on nodes
// and each is in one of the phases ok for the policy's generation.
func (c *cluster) waitEnactments(t testing.TB, name string, nodes []string, timeout time.Duration, ok ...string) []enactment {
	t.Helper()
	var es []enactment
	suite.EventuallyEvery(t, timeout, 100*time.Millisecond, fmt.Sprintf("policy %s: enactments on %v in phases %v", name, nodes, ok), func() error {
		p := c.getPolicy(t, name)
		var err error
		es, err = c.enactments(t.Context(), name)
		if err != nil {
			return err
		}
		done := len(es) == len(nodes)
		for i := range es {
			if !done {
				break
			}
			if es[i].Name != shared.EnactmentName(nodes[i], name) || !contains(ok, phaseOf(&es[i], p.Generation)) {
				done = false
			}
		}
		if !done {
			return errors.New(describe(es))
		}
		return nil
	})
	return es
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// setNodeLabel sets (value non-nil) or removes a label of a node with a
// merge patch.
func (c *cluster) setNodeLabel(t testing.TB, node, key string, value *string) {
	t.Helper()
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, v)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.c.Patch(t.Context(), n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("label node %s: %v", node, err)
	}
}

// labelNode sets a label for the test and removes it at its end.
func (c *cluster) labelNode(t testing.TB, node, key, value string) {
	t.Helper()
	t.Cleanup(func() {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
		if err := c.c.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Errorf("cleanup: unlabel node %s: %v", node, err)
		}
	})
	c.setNodeLabel(t, node, key, &value)
}

// applies counts the handler's apply attempts on a node: the "applying"
// log line the reconciler writes right before each transaction (the lab's
// handlers are processes, so the in-process OnApply hook is out of reach).
func (c *cluster) applies(t testing.TB, node string) int {
	t.Helper()
	return bytes.Count(c.handlerLogText(t, node), []byte("msg=applying "))
}

// checkpointPath is the node's pending checkpoint record (pkg/apply).
func (c *cluster) checkpointPath(node string) string {
	return filepath.Join(c.stateDir(node), "checkpoint.json")
}

func checkpointExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
