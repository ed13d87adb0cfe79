package lab

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/version"
)

// Roles of lab nodes.
const (
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
)

// DefaultHeartbeat is how often the lab refreshes the nodes' Ready
// condition, as a kubelet's status updates would.
const DefaultHeartbeat = 10 * time.Second

// nodeObject is the Node of a lab node: the labels, addresses, node info
// and Ready condition a kubelet would report.
func nodeObject(n NodeState, now time.Time) *corev1.Node {
	kernel, image := kernelRelease(), "knmstate lab node (network namespace)"
	if n.Kernel != "" {
		kernel, image = n.Kernel, "knmstate lab node (network namespace in a qemu guest)"
	}
	labels := map[string]string{
		"kubernetes.io/hostname":            n.Name,
		"kubernetes.io/os":                  "linux",
		"kubernetes.io/arch":                runtime.GOARCH,
		"beta.kubernetes.io/os":             "linux",
		"node-role.kubernetes.io/" + n.Role: "",
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.Name,
			Labels: labels,
			Annotations: map[string]string{
				"knmstate.io/lab-netns": n.NetNS,
			},
		},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.Address},
				{Type: corev1.NodeHostName, Address: n.Name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux",
				Architecture:    runtime.GOARCH,
				KubeletVersion:  "knmstate-lab/" + version.Version,
				KernelVersion:   kernel,
				// No kubelet and no container runtime: the node is a set of
				// namespaces.
				ContainerRuntimeVersion: "none",
				OSImage:                 image,
			},
			Conditions: []corev1.NodeCondition{readyCondition(now, now)},
		},
	}
}

func readyCondition(heartbeat, transition time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionTrue,
		Reason:             "KubeletReady",
		Message:            "knmstate lab keeps this node ready",
		LastHeartbeatTime:  metav1.NewTime(heartbeat),
		LastTransitionTime: metav1.NewTime(transition),
	}
}

// createNode creates the Node and sets its status (the API ignores status
// on create).
func createNode(ctx context.Context, kube kubernetes.Interface, n NodeState) error {
	obj := nodeObject(n, time.Now())
	created, err := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	created.Status = obj.Status
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", n.Name, err)
	}
	return nil
}

// keepReady refreshes the Ready condition's heartbeat of every node until
// ctx ends; it restores Ready if something else changed it.
func keepReady(ctx context.Context, kube kubernetes.Interface, nodes []NodeState, every time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, n := range nodes {
			if err := refreshReady(ctx, kube, n.Name); err != nil && ctx.Err() == nil {
				logf("node heartbeat", "node", n.Name, "err", err)
			}
		}
	}
}

func refreshReady(ctx context.Context, kube kubernetes.Interface, name string) error {
	node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	found := false
	for i, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		found = true
		transition := c.LastTransitionTime.Time
		if c.Status != corev1.ConditionTrue {
			transition = now
		}
		node.Status.Conditions[i] = readyCondition(now, transition)
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, readyCondition(now, now))
	}
	_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

var nnsResource = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkstates"}

// missingNNS returns the nodes without a NodeNetworkState that has a
// reported state.
func missingNNS(ctx context.Context, dyn dynamic.Interface, nodes []NodeState) ([]string, error) {
	list, err := dyn.Resource(nnsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, o := range list.Items {
		if _, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "currentState"); ok {
			have[o.GetName()] = true
		}
	}
	var missing []string
	for _, n := range nodes {
		if !have[n.Name] {
			missing = append(missing, n.Name)
		}
	}
	return missing, nil
}

// kernelRelease is this machine's kernel release: the nodes share it.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
