package lab

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var nncpGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}

// rebootPolicies are two policies for node02 that a reboot wipes: an
// address on eth1, a bridge over eth2 with its own address.
var rebootPolicies = map[string]string{
	"eth1-static": `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: eth1-static}
spec:
  nodeSelector: {kubernetes.io/hostname: node02}
  desiredState:
    interfaces:
    - name: eth1
      type: ethernet
      state: up
      ipv4: {enabled: true, address: [{ip: 10.10.0.2, prefix-length: 24}]}
`,
	"br1": `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: br1}
spec:
  nodeSelector: {kubernetes.io/hostname: node02}
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      state: up
      bridge:
        options: {stp: {enabled: false}}
        port: [{name: eth2}]
      ipv4: {enabled: true, address: [{ip: 10.20.0.2, prefix-length: 24}]}
`,
}

// TestLabRebootReappliesPolicies: a worker with two Available policies is
// rebooted; its namespace is a new one, both policies are applied once
// more (once each: nothing twice) and their enactments are Available
// again; the time from reboot to Available is logged.
func TestLabRebootReappliesPolicies(t *testing.T) {
	name, dir := testLab(t, "reboot")
	run(t, "lab", "up", "--name", name, "--dir", dir, "--nodes", "2")
	st, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamicFor(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	enactments := map[string]Enactment{}
	for pname, doc := range rebootPolicies {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(nncpGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create policy %s: %v", pname, err)
		}
		enactments["node02."+pname] = Enactment{}
	}
	if _, err := WaitAvailableAgain(ctx, st.Kubeconfig, "node02", enactments, time.Time{}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	node, err := st.Node("node02")
	if err != nil {
		t.Fatal(err)
	}
	nsPath := filepath.Join("/run/netns", node.NetNS)
	inodeBefore := nsInode(t, nsPath)
	logPath := filepath.Join(dir, "nodes", "node02", "handler.log")
	logBefore, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}

	out := run(t, "lab", "reboot", "node02", "--name", name, "--dir", dir)
	t.Logf("lab reboot:\n%s", out)
	if !regexp.MustCompile(`2 enactments Available again \S+ after the reboot`).MatchString(out) {
		t.Errorf("lab reboot did not report the enactments Available again:\n%s", out)
	}

	if nsInode(t, nsPath) == inodeBefore {
		t.Errorf("node02's network namespace is the same one after the reboot")
	}
	logAll, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	since := string(logAll[len(logBefore):])
	for pname := range rebootPolicies {
		n := len(regexp.MustCompile(`msg=applying .*policy=`+regexp.QuoteMeta(pname)+`\b`).FindAllString(since, -1))
		if n != 1 {
			t.Errorf("policy %s applied %d times after the reboot, want once; handler log since:\n%s", pname, n, since)
		}
	}
	checkAddr(t, node.NetNS, "eth1", "10.10.0.2/24")
	checkAddr(t, node.NetNS, "br1", "10.20.0.2/24")
	// eth0 has its lease again (the DHCP reservation's address).
	checkAddr(t, node.NetNS, "eth0", node.Address+"/24")
	st2, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st2.Processes {
		if p.Name == "handler/node02" && p.Status != "running" {
			t.Errorf("handler/node02 is %s", p.Status)
		}
	}
}

// checkAddr requires ifname in the named namespace to have addr.
func checkAddr(t *testing.T, nsName, ifname, addr string) {
	t.Helper()
	if msg := addrMissing(nsName, ifname, addr); msg != "" {
		t.Error(msg)
	}
}

func TestRebootNotBefore(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		before map[string]Enactment
		want   time.Time
	}{
		{"none", nil, time.Time{}.Add(time.Second)},
		{"the second after the latest Available", map[string]Enactment{
			"n.a": {Since: at("2026-11-27T06:50:11Z")},
			"n.b": {Since: at("2026-11-27T06:50:13Z")},
		}, at("2026-11-27T06:50:14Z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RebootNotBefore(tc.before); !got.Equal(tc.want) {
				t.Errorf("RebootNotBefore = %v, want %v", got, tc.want)
			}
		})
	}
}
