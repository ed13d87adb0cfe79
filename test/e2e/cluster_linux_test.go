package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/internal/testbed/lab"
)

// TestNodes: kubectl sees the lab's three nodes, Ready, with the labels
// the examples select on.
func TestNodes(t *testing.T) {
	out := c.kubectl.Must(t, "get", "nodes", "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range list.Items {
		got = append(got, n.Metadata.Name)
		if h := n.Metadata.Labels["kubernetes.io/hostname"]; h != n.Metadata.Name {
			t.Errorf("node %s: kubernetes.io/hostname=%q", n.Metadata.Name, h)
		}
		_, worker := n.Metadata.Labels["node-role.kubernetes.io/worker"]
		if want := n.Metadata.Name != "node01"; worker != want {
			t.Errorf("node %s: worker label present %v, want %v", n.Metadata.Name, worker, want)
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			ready = ready || cond.Type == "Ready" && cond.Status == "True"
		}
		if !ready {
			t.Errorf("node %s is not Ready: %+v", n.Metadata.Name, n.Status.Conditions)
		}
	}
	if diff := cmp.Diff([]string{"node01", "node02", "node03"}, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// TestNodeNetworkStates: every node's NodeNetworkState reports what the
// kernel inside the node really has: eth0..eth2 and eth0's DHCP address.
func TestNodeNetworkStates(t *testing.T) {
	for _, n := range c.state.Nodes {
		out := c.kubectl.Must(t, "get", "nns", n.Name, "-o", "json")
		var nns struct {
			Status struct {
				HostNetworkManagerVersion string `json:"hostNetworkManagerVersion"`
				CurrentState              struct {
					Interfaces []struct {
						Name string `json:"name"`
						IPv4 struct {
							Address []struct {
								IP           string `json:"ip"`
								PrefixLength int    `json:"prefix-length"`
							} `json:"address"`
						} `json:"ipv4"`
					} `json:"interfaces"`
				} `json:"currentState"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &nns); err != nil {
			t.Fatalf("nns %s: %v", n.Name, err)
		}
		reported := map[string][]string{}
		for _, ifc := range nns.Status.CurrentState.Interfaces {
			reported[ifc.Name] = []string{}
			for _, a := range ifc.IPv4.Address {
				reported[ifc.Name] = append(reported[ifc.Name], a.IP+"/"+strconv.Itoa(a.PrefixLength))
			}
		}
		kernel := links(t, n.Name)
		for _, nic := range []string{"eth0", "eth1", "eth2"} {
			if _, ok := kernel[nic]; !ok {
				t.Errorf("node %s: no %s in the node's namespace", n.Name, nic)
			}
			got, ok := reported[nic]
			if !ok {
				t.Errorf("node %s: nns lacks %s", n.Name, nic)
				continue
			}
			if diff := cmp.Diff(kernel[nic].ipv4(), got, cmp.Comparer(func(a, b []string) bool {
				return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
			})); diff != "" {
				t.Errorf("node %s: %s IPv4 in the nns differs from the kernel's (-kernel +nns):\n%s", n.Name, nic, diff)
			}
		}
		if want := n.Address + "/24"; !slices.Contains(reported["eth0"], want) {
			t.Errorf("node %s: nns eth0 IPv4 %v lacks the DHCP address %s", n.Name, reported["eth0"], want)
		}
		// As upstream reports it: NetworkManager's version where the
		// handler drives it, "none" on the kernel backend.
		v := nns.Status.HostNetworkManagerVersion
		if nm := c.state.Backend() == lab.BackendNetworkManager; nm && !regexp.MustCompile(`^1\.[0-9]+\.[0-9]+`).MatchString(v) || !nm && v != "none" {
			t.Errorf("node %s: hostNetworkManagerVersion %q on a lab of backend %s", n.Name, v, c.state.Backend())
		}
	}
}

// TestExamplesAcceptedByTheAPI: the API server (CRD schemas and the
// project's admission policy) accepts every file of examples/ as it is, a
// server-side dry run through kubectl.
func TestExamplesAcceptedByTheAPI(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			out := c.kubectl.Must(t, "apply", "--dry-run=server", "-f", f)
			if !strings.Contains(out, "(server dry run)") {
				t.Errorf("kubectl apply --dry-run=server -f %s: %q", f, out)
			}
		})
	}
}

// TestEveryExampleHasAnExpectation: no file of examples/ is silently left
// out of the end-to-end run, and the table names only existing files with
// the policy names they really carry.
func TestEveryExampleHasAnExpectation(t *testing.T) {
	var files []string
	for _, f := range exampleFiles(t) {
		files = append(files, filepath.Base(f))
	}
	var table []string
	for _, e := range examples {
		table = append(table, e.file)
		data, err := os.ReadFile(filepath.Join(c.examples, e.file))
		if err != nil {
			t.Errorf("%s: %v", e.file, err)
			continue
		}
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Errorf("%s: %v", e.file, err)
			continue
		}
		if e.outcome != notAPolicy && (obj.Kind != "NodeNetworkConfigurationPolicy" || obj.Metadata.Name != e.policy) {
			t.Errorf("%s: %s %q, want the NodeNetworkConfigurationPolicy %q", e.file, obj.Kind, obj.Metadata.Name, e.policy)
		}
	}
	slices.Sort(table)
	if diff := cmp.Diff(files, table); diff != "" {
		t.Errorf("examples/ files (-dir +table):\n%s", diff)
	}
}

func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(c.examples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s (%v)", c.examples, err)
	}
	return files
}

// TestLabStatus: `knmstate lab status` lists the lab's processes, all
// running (in guest mode the guest's, as its agent reports them, and qemu),
// and every node Ready with its NodeNetworkState.
func TestLabStatus(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), c.knmstate, "lab", "status", "--dir", c.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("lab status: %v\n%s", err, out)
	}
	status := string(out)
	want := []string{"handler/node01", "handler/node02", "handler/node03", "controller"}
	if c.kubelet {
		// knmstate runs as pods: the lab runs the nodes' inits.
		want = []string{"node-init/node01", "node-init/node02", "node-init/node03"}
	}
	if *backend != lab.BackendNetworkManager {
		want = append(want, "noded/node01")
	} else if strings.Contains(status, "noded/") {
		// NetworkManager owns eth0: no node runtime runs.
		t.Errorf("lab status lists a node runtime on NetworkManager nodes:\n%s", status)
	}
	if c.fullKernel {
		want = append(want, "qemu", "guest: qemu (TCG), Debian kernel", "guest (netns ")
	}
	for _, w := range want {
		if !strings.Contains(status, w) {
			t.Errorf("lab status lacks %q:\n%s", w, status)
		}
	}
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (strings.HasPrefix(f[0], "handler/") || strings.HasPrefix(f[0], "noded/") || f[0] == "qemu") && f[2] != "running" {
			t.Errorf("not running: %s", line)
		}
		if len(f) >= 6 && strings.HasPrefix(f[0], "node0") && (f[4] != "True" || f[5] != "yes") {
			t.Errorf("node not Ready with a NodeNetworkState: %s", line)
		}
	}
}
