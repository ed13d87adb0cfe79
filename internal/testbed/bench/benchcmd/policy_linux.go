package benchcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// policyExample is the policy the policy measurements create.
const policyExample = "examples/linux-bridge.yaml"

// enactmentGrace is how long a created policy may go without any
// enactment before the handlers are taken not to reconcile policies.
const enactmentGrace = 30 * time.Second

// readPolicy reads the example policy, renamed and with the given
// maxUnavailable ("" leaves it unset), as YAML for kubectl.
func readPolicy(env Env, name, maxUnavailable string) ([]byte, error) {
	path := filepath.Join(env.RepoRoot, policyExample)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, notMeasurable("the example policy: %v", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := unstructured.Unstructured{Object: obj}
	u.SetName(name)
	if maxUnavailable != "" {
		if err := unstructured.SetNestedField(u.Object, maxUnavailable, "spec", "maxUnavailable"); err != nil {
			return nil, err
		}
	}
	return yaml.Marshal(u.Object)
}

// createAndWaitAvailable creates the policy with kubectl and returns the
// time until its Available condition is True. It fails when the policy
// degrades, and is not measurable when no enactment appears at all.
func createAndWaitAvailable(ctx context.Context, l *benchLab, name string, policy []byte) (time.Duration, error) {
	start := time.Now()
	if err := l.kubectl(ctx, policy, "create", "-f", "-"); err != nil {
		return 0, err
	}
	sawEnactment := false
	err := waitFor(ctx, 20*time.Millisecond, "policy "+name+" Available", func() (bool, error) {
		o, err := l.dyn.Resource(nncpGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			switch {
			case m["type"] == "Available" && m["status"] == "True":
				return true, nil
			case m["type"] == "Degraded" && m["status"] == "True":
				return false, fmt.Errorf("policy %s degraded: %v: %v", name, m["reason"], m["message"])
			}
		}
		if !sawEnactment {
			list, err := l.dyn.Resource(nnceGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			sawEnactment = len(list.Items) > 0
			if !sawEnactment && time.Since(start) > enactmentGrace {
				return false, notMeasurable("no NodeNetworkConfigurationEnactment %v after creating the policy: the handlers do not reconcile policies in this build", enactmentGrace)
			}
		}
		return false, nil
	})
	return time.Since(start), err
}

// policyAvailable3 is policy.available3 on a 3-node lab: the time from
// `kubectl create -f examples/linux-bridge.yaml` to Available. Between
// runs (untimed) the policy is deleted and a policy removing its bridge
// is applied and deleted, so that every run really changes the nodes;
// one lab serves all runs (a lab's start-up costs more than a run).
func policyAvailable3(ctx context.Context, env Env) ([]Result, error) {
	policy, err := readPolicy(env, "linux-bridge", "")
	if err != nil {
		return nil, err
	}
	var times []time.Duration
	_, err = withLab(ctx, env, "avail", 3, func(l *benchLab) ([]Result, error) {
		for i := range env.runs(5) {
			if i > 0 {
				if err := undoLinuxBridge(ctx, l); err != nil {
					return nil, fmt.Errorf("between runs: %w", err)
				}
			}
			d, err := createAndWaitAvailable(ctx, l, "linux-bridge", policy)
			if err != nil {
				return nil, err
			}
			env.logf("bench: policy.available3 run %d: %v", i+1, d.Round(time.Millisecond))
			times = append(times, d)
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return []Result{{Name: "policy.available3", Value: num(medianDuration(times).Seconds()), Unit: "s", Target: "-",
		Note: fmt.Sprintf("kubectl create -f %s until Available, 3-node lab; bridge removed between runs; median of %d", policyExample, len(times))}}, nil
}

// undoPolicy removes the example's bridge from every node.
const undoPolicy = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: linux-bridge-undo
spec:
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      state: absent
`

// undoLinuxBridge deletes the linux-bridge policy, applies undoPolicy
// until Available and deletes it, waiting for both to be gone.
func undoLinuxBridge(ctx context.Context, l *benchLab) error {
	if err := deletePolicy(ctx, l, "linux-bridge"); err != nil {
		return err
	}
	if _, err := createAndWaitAvailable(ctx, l, "linux-bridge-undo", []byte(undoPolicy)); err != nil {
		return err
	}
	return deletePolicy(ctx, l, "linux-bridge-undo")
}

// deletePolicy deletes a policy and waits until it and its enactments
// are gone.
func deletePolicy(ctx context.Context, l *benchLab, name string) error {
	if err := l.kubectl(ctx, nil, "delete", "nncp", name, "--wait=true"); err != nil {
		return err
	}
	return waitFor(ctx, 50*time.Millisecond, "the enactments of "+name+" to go", func() (bool, error) {
		list, err := l.dyn.Resource(nnceGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, o := range list.Items {
			if strings.HasSuffix(o.GetName(), "."+name) {
				return false, nil
			}
		}
		return true, nil
	})
}

// rolloutNodes is the lab size of policy.rollout50.
const rolloutNodes = 50

// policyRollout50 is policy.rollout50: the example policy with
// maxUnavailable 50% on a 50-node lab (one handler process per node):
// time to Available, and the API writes per node it caused.
func policyRollout50(ctx context.Context, env Env) ([]Result, error) {
	policy, err := readPolicy(env, "linux-bridge-rollout", "50%")
	if err != nil {
		return nil, err
	}
	return withLab(ctx, env, "roll", rolloutNodes, func(l *benchLab) ([]Result, error) {
		// Start-up writes (NNS creation) are over once the lab is up;
		// a short pause lets the last ones land.
		if err := sleep(ctx, 2*time.Second); err != nil {
			return nil, err
		}
		before, err := l.apiWrites(ctx)
		if err != nil {
			return nil, err
		}
		load := loadAverage()
		tl, err := watchEnactments(ctx, l.dyn, "linux-bridge-rollout", time.Now())
		if err != nil {
			return nil, err
		}
		d, err := createAndWaitAvailable(ctx, l, "linux-bridge-rollout", policy)
		steps := tl.stop()
		timeline := summarizeTimeline(steps)
		env.logf("bench: policy.rollout50: %v; %s", d.Round(time.Millisecond), timeline)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, timeline)
		}
		after, err := l.apiWrites(ctx)
		if err != nil {
			return nil, err
		}
		byResource := map[string]float64{}
		for _, c := range after {
			if isKnmstateWrite(c) {
				key := c.resource
				if c.subresource != "" {
					key += "/" + c.subresource
				}
				byResource[key] += c.n
			}
		}
		for _, c := range before {
			if isKnmstateWrite(c) {
				key := c.resource
				if c.subresource != "" {
					key += "/" + c.subresource
				}
				byResource[key] -= c.n
			}
		}
		var parts []string
		var total float64
		for k, v := range byResource {
			if v != 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
				total += v
			}
		}
		slices.Sort(parts)
		return []Result{
			{Name: "policy.rollout50.available", Value: num(d.Seconds()), Unit: "s", Target: "< 2",
				Note: fmt.Sprintf("%d nodes, one handler process each, maxUnavailable 50%%: kubectl create until Available; %s; load average %s at the start", rolloutNodes, timeline, load)},
			{Name: "policy.rollout50.writes", Value: num(total / rolloutNodes), Unit: "writes/node", Target: "-",
				Note: "API write requests from create to Available, without Node heartbeats and leases: " + strings.Join(parts, ", ")},
		}, nil
	})
}
