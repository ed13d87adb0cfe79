// The tests of this file are about kubelet mode (-suite.kubelet): real
// kubelets registered the nodes, and knmstate runs as the pods of
// deploy/knmstate with the images of make images.

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// requireKubelet skips a kubelet-mode test in a run of the suite in the
// default mode (make test runs the suite in both modes).
func requireKubelet(t *testing.T) {
	t.Helper()
	if !c.kubelet {
		t.Skip("kubelet mode only: make test-kubelet runs the suite with -suite.kubelet")
	}
}

// pod is what the suite reads of a pod.
type pod struct {
	Metadata struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		NodeName    string `json:"nodeName"`
		HostNetwork bool   `json:"hostNetwork"`
		Containers  []struct {
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase             string `json:"phase"`
		PodIP             string `json:"podIP"`
		ContainerStatuses []struct {
			Ready   bool   `json:"ready"`
			ImageID string `json:"imageID"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p pod) ready() bool {
	if p.Status.Phase != "Running" || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready {
			return false
		}
	}
	return true
}

func pods(t *testing.T, component string) []pod {
	t.Helper()
	var list struct {
		Items []pod `json:"items"`
	}
	out := c.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-l", "app.kubernetes.io/component="+component, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestKubeletNodes: the nodes were registered by kubelets of the pinned
// version running on containerd.
func TestKubeletNodes(t *testing.T) {
	requireKubelet(t)
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				NodeInfo struct {
					KubeletVersion          string `json:"kubeletVersion"`
					ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(c.kubectl.Must(t, "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d nodes, want 3", len(list.Items))
	}
	for _, n := range list.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != "v1.36.3" {
			t.Errorf("node %s: kubelet %q, want v1.36.3", n.Metadata.Name, v)
		}
		if r := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(r, "containerd://2.") {
			t.Errorf("node %s: container runtime %q, want containerd://2.x", n.Metadata.Name, r)
		}
	}
}

// TestHandlerPods: a handler pod runs on every node, from the image make
// images built, pulled from the lab registry (the digest the image's
// record names).
func TestHandlerPods(t *testing.T) {
	requireKubelet(t)
	var rec struct{ Digest string }
	b, err := os.ReadFile(filepath.Join(c.images, "knmstate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || !strings.HasPrefix(rec.Digest, "sha256:") {
		t.Fatalf("image record: %v (%q)", err, rec.Digest)
	}
	nodes := map[string]bool{}
	for _, p := range pods(t, "handler") {
		nodes[p.Spec.NodeName] = true
		if !p.ready() {
			t.Errorf("handler pod %s on %s not ready: %+v", p.Metadata.Name, p.Spec.NodeName, p.Status)
		}
		if !p.Spec.HostNetwork || p.Status.PodIP != nodeAddress(t, p.Spec.NodeName) {
			t.Errorf("handler pod %s: hostNetwork %v, IP %s; want the node's own network", p.Metadata.Name, p.Spec.HostNetwork, p.Status.PodIP)
		}
		if want := "registry.lab.example:5000/knmstate@" + rec.Digest; p.Spec.Containers[0].Image != want {
			t.Errorf("handler pod %s: image %s, want %s", p.Metadata.Name, p.Spec.Containers[0].Image, want)
		}
		if id := p.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(id, rec.Digest) {
			t.Errorf("handler pod %s runs image %s, want the digest %s of make images", p.Metadata.Name, id, rec.Digest)
		}
	}
	for _, n := range c.state.Nodes {
		if !nodes[n.Name] {
			t.Errorf("no handler pod on %s", n.Name)
		}
	}
}

func nodeAddress(t *testing.T, node string) string {
	for _, n := range c.state.Nodes {
		if n.Name == node {
			return n.Address
		}
	}
	t.Fatalf("no node %s", node)
	return ""
}

// TestControllerOnPodNetwork: the controller replicas are ordinary pods on
// the pod network, and the one holding the Lease reaches the API through
// the kubernetes Service (in-cluster configuration: its ClusterIP).
func TestControllerOnPodNetwork(t *testing.T) {
	requireKubelet(t)
	podNet := netip.MustParsePrefix("10.244.0.0/16")
	names := map[string]bool{}
	for _, p := range pods(t, "controller") {
		names[p.Metadata.Name] = true
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || p.Spec.HostNetwork || !podNet.Contains(ip) || !p.ready() {
			t.Errorf("controller pod %s: IP %q, hostNetwork %v, ready %v; want a ready pod on %s", p.Metadata.Name, p.Status.PodIP, p.Spec.HostNetwork, p.ready(), podNet)
		}
	}
	if len(names) != 2 {
		t.Errorf("%d controller pods, want 2", len(names))
	}
	if ip := c.kubectl.Must(t, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"); ip != "10.96.0.1" {
		t.Errorf("kubernetes Service ClusterIP %q, want 10.96.0.1", ip)
	}
	// The Lease is renewed every 2 s by its holder: a fresh renewal by a
	// controller pod proves its API connection works.
	suite.Eventually(t, time.Minute*c.slowdown, "the controller's Lease held by a controller pod", func() error {
		out := c.kubectl.Must(t, "-n", "nmstate", "get", "lease", "knmstate-controller", "-o", "jsonpath={.spec.holderIdentity} {.spec.renewTime}")
		holder, renew, _ := strings.Cut(out, " ")
		pod, _, _ := strings.Cut(holder, "_")
		if !names[pod] {
			return fmt.Errorf("holder %q is not a controller pod %v", holder, names)
		}
		at, err := time.Parse(time.RFC3339Nano, renew)
		if err != nil || time.Since(at) > 30*time.Second {
			return fmt.Errorf("renewed at %q, not recently", renew)
		}
		return nil
	})
}

// TestHandlerPodReplaced: deleting a handler pod, the DaemonSet starts a
// new one, which applies nothing (the policy is satisfied already) and the
// policy stays Available.
func TestHandlerPodReplaced(t *testing.T) {
	requireKubelet(t)
	requirePolicies(t)
	const node, policy = "node02", "e2e-replaced"
	c.kubectl.MustIn(t, policyYAML(policy, `
interfaces:
- {name: br-replaced, type: linux-bridge, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}, bridge: {port: []}}
`), "apply", "-f", "-")
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	before := enactmentOn(t, policy, node)
	var old pod
	for _, p := range pods(t, "handler") {
		if p.Spec.NodeName == node {
			old = p
		}
	}
	c.kubectl.Must(t, "-n", "nmstate", "delete", "pod", old.Metadata.Name, "--wait")
	var fresh pod
	suite.Eventually(t, 2*time.Minute*c.slowdown, "a new handler pod on "+node, func() error {
		for _, p := range pods(t, "handler") {
			if p.Spec.NodeName == node && p.Metadata.UID != old.Metadata.UID && p.ready() {
				fresh = p
				return nil
			}
		}
		return errors.New("none ready yet")
	})
	// The new handler decides about the policies one at a time, waiting
	// ones in name order: a policy created now, named after the one of
	// the test, is applied once the new handler has decided about that
	// one (it changes nothing: its bridge is absent already).
	const mark = policy + "-mark"
	c.kubectl.MustIn(t, policyYAML(mark, `
interfaces:
- {name: br-replmark, type: linux-bridge, state: absent}
`), "apply", "-f", "-")
	if err := policyReaches(t, mark, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	logs := c.kubectl.Must(t, "-n", "nmstate", "logs", fresh.Metadata.Name)
	var applies []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "msg=applying") {
			applies = append(applies, l)
		}
	}
	if len(applies) != 1 || !strings.Contains(applies[0], "policy="+mark+" ") {
		t.Errorf("the new handler pod's applies: %d, want 1, of %s:\n%s", len(applies), mark, logs)
	}
	deletePolicy(t, mark)
	if !strings.Contains(logs, "handler started") {
		t.Errorf("the new handler pod did not start its handler:\n%s", logs)
	}
	if after := enactmentOn(t, policy, node); after != before {
		t.Errorf("enactment conditions changed when the pod was replaced:\nbefore %s\nafter  %s", before, after)
	}
	if out := c.kubectl.Must(t, "get", "nncp", policy, "-o", "jsonpath={.status.conditions[?(@.type==\"Available\")].status}"); out != "True" {
		t.Errorf("policy %s Available=%q after the pod was replaced", policy, out)
	}
	c.kubectl.MustIn(t, policyYAML(policy, `
interfaces:
- {name: br-replaced, type: linux-bridge, state: absent}
`), "apply", "-f", "-")
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	deletePolicy(t, policy)
	pristine(t, node)
}

// enactmentOn is the conditions (with their transition times) of the
// policy's enactment on node.
func enactmentOn(t *testing.T, policy, node string) string {
	return c.kubectl.Must(t, "get", "nnce", node+"."+policy, "-o",
		"jsonpath={range .status.conditions[*]}{.type}={.status} {.lastTransitionTime} {.reason};{end}")
}
