package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// The tests of this file run on a kubelet-mode lab whose nodes run
// NetworkManager (lab up --kubelet --backend networkmanager): the handler is
// a DaemonSet's pod that finds NetworkManager through its /run/dbus
// hostPath (--backend auto), as on an OpenShift node.

// nmNode is the node the tests configure and reboot (a worker: the
// control-plane node keeps the controller).
const nmNode = "node02"

// nmLab starts the test's own 2-node kubelet lab with NetworkManager nodes;
// the handlers persist their profiles (the flag is passed where the
// binary has it: persisting may be its default).
func nmLab(t *testing.T) *cluster {
	t.Helper()
	if !kit.Kubelet {
		t.Skip("kubelet mode only (-suite.kubelet): the handler as a pod on NetworkManager nodes; runs in make test's cluster stage")
	}
	args := slices.Clone(handlerArgs)
	if help, _ := exec.Command(kit.Knmstate, "handler", "--help").CombinedOutput(); strings.Contains(string(help), "--persist-profiles ") {
		args = append(args, "--persist-profiles=true")
	}
	opts := lab.Options{Name: "c" + strconv.Itoa(os.Getpid()) + "nm", Nodes: 2, Heartbeat: time.Second, HandlerArgs: args,
		Kubelet: true, Backend: lab.BackendNetworkManager}
	c, err := startLabWith(t.Context(), opts, func(l *suite.Lab) {
		t.Cleanup(func() {
			if err := l.Down(context.Background()); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestKubeletNetworkManager: the handler pods report NetworkManager's
// version and apply through it (a bridge on eth1 that nmcli on the node
// shows connected through its profile); a persistent bridge over the
// primary NIC comes back after lab reboot from NetworkManager's profiles
// alone, with the node's DHCP address, while no handler runs on the node;
// the handler, back, keeps the enactment Available.
func TestKubeletNetworkManager(t *testing.T) {
	c := nmLab(t)
	ctx := t.Context()

	t.Run("NNSReportsNetworkManager", func(t *testing.T) {
		for _, n := range c.st.Nodes {
			if n.NetworkManagerBus == "" {
				t.Errorf("node %s: the lab runs no NetworkManager there", n.Name)
			}
			suite.Eventually(t, time.Minute, "NetworkManager's version in "+n.Name+"'s NodeNetworkState", func() error {
				nns, err := c.dyn.Resource(nnsGVR).Get(ctx, n.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				v, _, _ := unstructured.NestedString(nns.Object, "status", "hostNetworkManagerVersion")
				if v == "" || v == "none" {
					return fmt.Errorf("hostNetworkManagerVersion %q", v)
				}
				t.Logf("%s: hostNetworkManagerVersion %s", n.Name, v)
				return nil
			})
		}
	})

	t.Run("BridgeOnEth1", func(t *testing.T) {
		p := policyYAML(t, "nm-br1", map[string]string{"kubernetes.io/hostname": nmNode}, `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.2, prefix-length: 24}]}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth1
`)
		c.create(t, p)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
		checkNMConnected(t, c, nmNode, "br1", "eth1")
		if got := addrsOf(t, c.netlink(t, nmNode), "br1"); !slices.Contains(got, netip.MustParsePrefix("198.51.100.2/24")) {
			t.Errorf("br1 addresses %v, want 198.51.100.2/24", got)
		}
	})

	t.Run("PersistentBridgeOverEth0SurvivesReboot", func(t *testing.T) {
		eth0, err := c.netlink(t, nmNode).LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		mac := eth0.Attrs().HardwareAddr.String()
		// The bridge takes eth0's MAC, so the switch's DHCP server
		// gives it the node's reserved address.
		p := policyYAML(t, "nm-brext", map[string]string{"kubernetes.io/hostname": nmNode}, `
interfaces:
- name: brext
  type: linux-bridge
  state: up
  mac-address: "`+mac+`"
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: true, dhcp: true, autoconf: true}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
`)
		c.create(t, p)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 3*time.Minute)
		checkNMConnected(t, c, nmNode, "brext", "eth0")
		keyfiles := filepath.Join(c.dir, "nodes", nmNode, "etc", "NetworkManager", "system-connections")
		if !keyfileFor(t, keyfiles, "brext") {
			t.Fatalf("no persistent profile of brext in %s: the reboot would lose it", keyfiles)
		}

		// No handler on the node from now on: what comes back after the
		// reboot is NetworkManager's own doing.
		patchHandlerAffinity(t, c, fmt.Sprintf(`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":[%q]}]}]}}}`, nmNode))
		suite.Eventually(t, 2*time.Minute, "no handler pod on "+nmNode, func() error {
			if pods := handlerPods(t, c, nmNode); len(pods) > 0 {
				return fmt.Errorf("handler pods %v", pods)
			}
			return nil
		})

		res, err := lab.Reboot(ctx, c.dir, nmNode)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reboot of %s: down %v, up (address back) %v", nmNode, time.Duration(res.Down), time.Duration(res.Up))
		address := c.node(t, nmNode).Address
		suite.Eventually(t, 2*time.Minute, "brext with eth0 and the node's DHCP address after the reboot", func() error {
			nl := c.netlink(t, nmNode)
			br, err := nl.LinkByName("brext")
			if err != nil {
				return fmt.Errorf("brext: %w", err)
			}
			port, err := nl.LinkByName("eth0")
			if err != nil {
				return fmt.Errorf("eth0: %w", err)
			}
			if port.Attrs().MasterIndex != br.Attrs().Index {
				return fmt.Errorf("eth0 is not a port of brext")
			}
			if got := addrsOf(t, nl, "brext"); !slices.Contains(got, netip.MustParsePrefix(address+"/24")) {
				return fmt.Errorf("brext addresses %v, want %s/24", got, address)
			}
			return nil
		})
		checkNMConnected(t, c, nmNode, "brext", "eth0")
		if pods := handlerPods(t, c, nmNode); len(pods) > 0 {
			t.Fatalf("a handler pod ran on %s during the check: %v", nmNode, pods)
		}

		patchHandlerAffinity(t, c, "null")
		suite.Eventually(t, 3*time.Minute, "a ready handler pod on "+nmNode, func() error {
			pods := handlerPods(t, c, nmNode)
			if !slices.ContainsFunc(pods, func(p string) bool { return strings.HasSuffix(p, " ready") }) {
				return fmt.Errorf("handler pods %v", pods)
			}
			return nil
		})
		c.waitEnactments(t, p.Name, []string{nmNode}, 2*time.Minute, phaseAvailable)
		checkNMConnected(t, c, nmNode, "brext", "eth0")
	})
}

// checkNMConnected checks with nmcli on the node (lab exec, which talks to
// the node's NetworkManager) that each device is connected through a
// profile. NetworkManager may still be finishing the activation when the
// address is back (state 80, "checking IP connectivity": a CI run saw it
// right after a reboot), so it waits for 100 (connected).
func checkNMConnected(t *testing.T, c *cluster, node string, devices ...string) {
	t.Helper()
	for _, d := range devices {
		suite.Eventually(t, time.Minute, "node "+node+": "+d+" connected by NetworkManager", func() error {
			out, err := c.lab.Exec(t.Context(), node, "", "nmcli", "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", d)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if err != nil || len(lines) < 2 || !strings.HasPrefix(lines[0], "100") || lines[1] == "" {
				return fmt.Errorf("%s is not connected by NetworkManager: %q (%v)", d, out, err)
			}
			return nil
		})
	}
}

// keyfileFor reports whether dir holds a keyfile whose profile is for
// interface name.
func keyfileFor(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.nmconnection"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\ninterface-name="+name+"\n") {
			return true
		}
	}
	return false
}

// patchHandlerAffinity sets the handler DaemonSet's pod affinity (JSON,
// "null" to remove it).
func patchHandlerAffinity(t *testing.T, c *cluster, affinity string) {
	t.Helper()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "knmstate-handler", Namespace: "nmstate"}}
	patch := `{"spec":{"template":{"spec":{"affinity":` + affinity + `}}}}`
	if err := c.c.Patch(t.Context(), ds, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching the handler DaemonSet's affinity: %v", err)
	}
}

// handlerPods are the handler pods bound to node, in any phase: "NAME
// PHASE", or "NAME ready".
func handlerPods(t *testing.T, c *cluster, node string) []string {
	t.Helper()
	var list corev1.PodList
	if err := c.c.List(t.Context(), &list, client.InNamespace("nmstate"), client.MatchingLabels{"app.kubernetes.io/component": "handler"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName != node {
			continue
		}
		state := string(p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				state = "ready"
			}
		}
		out = append(out, p.Name+" "+state)
	}
	return out
}
