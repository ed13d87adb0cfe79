package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// handlerArgs shorten the handlers' safety net for the suite: one attempt
// per policy generation (a failure ends the enactment at once, so a
// Degraded policy is also a finished one) and a 10 s gateway probe (the
// rollback test waits for it). They are passed only when the handler has
// the policy flags; policiesReady fails the policy tests otherwise.
var handlerArgs = []string{"--max-retries=1", "--probe-ping-timeout=10s"}

// cluster is the suite's lab.
type cluster struct {
	name, dir  string
	kubeconfig string
	knmstate   string
	lab        *suite.Lab
	kubectl    suite.Kubectl
	// examples is the repository's examples/ directory.
	examples string
	state    *lab.State
	// policyFlags: the handler binary has the policy flags.
	policyFlags bool
	// kubelet: the lab runs kubelets and knmstate as pods; images is the
	// directory of the images it serves.
	kubelet bool
	images  string
	// fullKernel: the nodes run on Debian's kernel in a qemu guest
	// (nodeKernel); everything in them is many times slower (TCG), so
	// the suite's waits are stretched by slowdown.
	fullKernel bool
	slowdown   time.Duration
}

// c is the suite's one lab, started by TestMain (read-only afterwards).
var c *cluster

// The suite runs against a lab of either mode: handler processes (the
// default) or real kubelets with knmstate as pods (-suite.kubelet, with the
// binary and images of `make build images`: make test-kubelet).
var backend = flag.String("e2e.backend", "", "the nodes' network backend: kernel (default) or networkmanager (a NetworkManager per node, driven by its handler)")

// withOVS is the mode the suite expects of a default-mode lab with the
// kernel backend: nodes with their own Open vSwitch, or (false) a lab asked
// for without it. Kubelet, guest and NetworkManager nodes have none.
var withOVS = flag.Bool("e2e.ovs", true, "expect every default-mode node to have its own Open vSwitch (false: ask for a lab without it)")

// onlyExamples narrows TestExamples to the examples whose file it matches:
// for a stage with a budget of its own (.ci/run's part of kernelnm).
var onlyExamples = flag.String("e2e.examples", "", "run only the examples of TestExamples whose file name matches this regular expression (default: every one)")

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "e2e", BuildKnmstate: true, Require: []string{suite.KubectlPath}}, func(k *suite.Kit) int {
		cl, err := upCluster(k)
		if err != nil {
			k.Logf("%v", err)
			return 1
		}
		c = cl
		return m.Run()
	}))
}

// upCluster brings the suite's lab up (the kit takes it down).
func upCluster(k *suite.Kit) (*cluster, error) {
	cl := &cluster{
		name:       "e2e-" + strconv.Itoa(os.Getpid()),
		knmstate:   k.Knmstate,
		examples:   filepath.Join(k.Root, "examples"),
		kubelet:    k.Kubelet,
		fullKernel: nodeKernel != "",
		slowdown:   1,
	}
	if cl.fullKernel {
		cl.slowdown = 4
		if cl.kubelet {
			return nil, errors.New("-suite.kubelet and the guest's kernel (-tags qemu) do not combine")
		}
	}
	help, _ := exec.Command(cl.knmstate, "handler", "--help").CombinedOutput()
	cl.policyFlags = strings.Contains(string(help), "--max-retries")
	opts := lab.Options{
		Name: cl.name, Nodes: 3,
		Kubelet: cl.kubelet,
		Kernel:  nodeKernel,
		Backend: *backend,
	}
	if cl.kubelet {
		// As users install it: the operator bundle and an NMState.
		opts.Install = lab.InstallOperator
		cl.images = k.Images
	}
	if cl.policyFlags {
		opts.HandlerArgs = handlerArgs
	}
	// Guest nodes have Open vSwitch on the NetworkManager backend only
	// (lab.Options.NoOVS).
	wantOVS := *withOVS && !cl.kubelet && (!cl.fullKernel || *backend == lab.BackendNetworkManager)
	opts.NoOVS = !wantOVS
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute*cl.slowdown)
	defer cancel()
	l, err := k.Up(ctx, opts)
	if err != nil {
		return nil, err
	}
	k.Logf("nodes' kernel: %s, handler policy flags: %v", kernelName(), cl.policyFlags)
	cl.lab, cl.dir, cl.state = l, l.Dir, l.State
	cl.kubeconfig, cl.kubectl = l.State.Kubeconfig, l.Kubectl
	// Said and checked, so that the OVS tests never check a refusal
	// because the lab quietly came up without Open vSwitch.
	k.Logf("mode: kubelet %v, guest kernel %v, backend %q, Open vSwitch on every node: %v", cl.kubelet, cl.fullKernel, *backend, wantOVS)
	if cl.ovs() != wantOVS {
		return nil, fmt.Errorf("the suite expects Open vSwitch on every node: %v, and the lab's nodes have it: %v", wantOVS, cl.ovs())
	}
	return cl, nil
}

// ipLink is the part of `ip -j -d link show` the suite reads.
type ipLink struct {
	Name    string `json:"ifname"`
	Master  string `json:"master"`
	Address string `json:"address"`
	MTU     int    `json:"mtu"`
	// Link is the parent of a VLAN (its base interface).
	Link     string `json:"link"`
	LinkInfo struct {
		Kind string         `json:"info_kind"`
		Data map[string]any `json:"info_data"`
	} `json:"linkinfo"`
	AddrInfo []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// links returns a node's links with their addresses, by name.
func links(t testing.TB, node string) map[string]ipLink {
	t.Helper()
	var details, addrs []ipLink
	if err := json.Unmarshal([]byte(c.lab.MustExec(t, node, "ip", "-j", "-d", "link", "show")), &details); err != nil {
		t.Fatalf("node %s: ip -j link: %v", node, err)
	}
	if err := json.Unmarshal([]byte(c.lab.MustExec(t, node, "ip", "-j", "addr", "show")), &addrs); err != nil {
		t.Fatalf("node %s: ip -j addr: %v", node, err)
	}
	out := map[string]ipLink{}
	for _, l := range details {
		out[l.Name] = l
	}
	for _, a := range addrs {
		l := out[a.Name]
		l.AddrInfo = a.AddrInfo
		out[a.Name] = l
	}
	return out
}

// ipv4 returns a link's IPv4 addresses as "address/prefix".
func (l ipLink) ipv4() []string {
	var out []string
	for _, a := range l.AddrInfo {
		if a.Family == "inet" {
			out = append(out, a.Local+"/"+strconv.Itoa(a.PrefixLen))
		}
	}
	return out
}

// kernelName names the nodes' kernel for messages.
func kernelName() string {
	if nodeKernel == "" {
		return "this machine's"
	}
	return nodeKernel + " (qemu guest)"
}
