//go:build kubelet

package openshift

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/knmstate/knmstate/internal/testbed/lab"
)

// writesByUser counts the audit log's writes in [from, to) by user and
// resource.
func writesByUser(t *testing.T, st *lab.State, from, to time.Time) map[string]int {
	t.Helper()
	if st.AuditLog == "" {
		t.Fatal("the lab keeps no audit log")
	}
	f, err := os.Open(st.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Verb           string
			User           struct{ Username string }
			ObjectRef      struct{ Resource, APIGroup, Subresource string }
			StageTimestamp time.Time
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if e.StageTimestamp.Before(from) || !e.StageTimestamp.Before(to) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.APIGroup != "" {
			res += "." + e.ObjectRef.APIGroup
		}
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		out[e.User.Username+" "+e.Verb+" "+res]++
	}
	return out
}

// podUsage is each knmstate pod's CPU (millicores) and working set as the
// kubelets report them (Summary API).
func podUsage(t *testing.T, st *lab.State) []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, node := range st.Nodes {
		raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy/stats/summary").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Pods []struct {
				PodRef struct{ Name, Namespace string } `json:"podRef"`
				CPU    *struct {
					UsageNanoCores *float64 `json:"usageNanoCores"`
				} `json:"cpu"`
				Memory *struct {
					WorkingSetBytes *float64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatal(err)
		}
		for _, p := range sum.Pods {
			if p.PodRef.Namespace != ns {
				continue
			}
			cpu, mem := -1.0, -1.0
			if p.CPU != nil && p.CPU.UsageNanoCores != nil {
				cpu = *p.CPU.UsageNanoCores / 1e6
			}
			if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
				mem = *p.Memory.WorkingSetBytes / (1 << 20)
			}
			out = append(out, fmt.Sprintf("%s on %s: %.1f m CPU, %.1f MiB", p.PodRef.Name, node.Name, cpu, mem))
		}
	}
	sort.Strings(out)
	return out
}

// testBudget: what an on-by-default component costs an idle cluster: API
// writes per minute by user (nmstate.io objects: none), and each pod's CPU
// and memory.
func testBudget(t *testing.T, st *lab.State) {
	time.Sleep(10 * time.Second) // the policy's last status writes settle
	from := time.Now()
	time.Sleep(time.Minute)
	to := time.Now()
	time.Sleep(2 * time.Second) // the audit log's last lines
	writes := writesByUser(t, st, from, to)
	keys := make([]string, 0, len(writes))
	for k := range writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var mine, nmstateObjects int
	for _, k := range keys {
		if strings.Contains(k, ":"+ns+":") {
			mine += writes[k]
			t.Logf("FIGURE budget.writes: %s: %d/min", k, writes[k])
			if strings.Contains(k, "nmstate.io") {
				nmstateObjects += writes[k]
			}
		}
	}
	t.Logf("FIGURE budget.writes.total: %d writes/min by knmstate's service accounts (%d of nmstate.io objects)", mine, nmstateObjects)
	if nmstateObjects != 0 {
		t.Errorf("an idle cluster: %d writes/min of nmstate.io objects", nmstateObjects)
	}
	for _, u := range podUsage(t, st) {
		t.Logf("FIGURE budget.pod: %s", u)
	}
}
