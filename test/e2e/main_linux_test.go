package e2e

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// kubectlPath is the real kubectl of this machine (Debian's
// kubernetes-client, installed by `make setup`); the suite never uses a
// client library to change the cluster.
const kubectlPath = "/usr/bin/kubectl"

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
// default) or real kubelets with knmstate as pods (-e2e.kubelet, with the
// binary and images of `make build images`: make test-kubelet).
var (
	kubeletMode = flag.Bool("e2e.kubelet", false, "run the suite on a kubelet-mode lab (knmstate as pods)")
	knmstateBin = flag.String("e2e.knmstate", "", "knmstate binary (default: built from cmd/knmstate); in kubelet mode the one the images hold")
	imagesDir   = flag.String("e2e.images", "", "images of make images (kubelet mode; default: the repository's bin/images)")
	backend     = flag.String("e2e.backend", "", "the nodes' network backend: kernel (default) or networkmanager (a NetworkManager per node, driven by its handler)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) (code int) {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		return 1
	}
	if _, err := os.Stat(kubectlPath); err != nil {
		return fail("%s is missing (make setup installs Debian's kubernetes-client): %v", kubectlPath, err)
	}
	root, err := testenv.FindRepoRoot()
	if err != nil {
		return fail("repository root: %v", err)
	}
	bin, err := os.MkdirTemp("", "knmstate-e2e-bin-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(bin)
	cl := &cluster{
		name:       "e2e-" + strconv.Itoa(os.Getpid()),
		knmstate:   filepath.Join(bin, "knmstate"),
		examples:   filepath.Join(root, "examples"),
		kubelet:    *kubeletMode,
		fullKernel: nodeKernel != "",
		slowdown:   1,
	}
	if cl.fullKernel {
		cl.slowdown = 4
		if cl.kubelet {
			return fail("-e2e.kubelet and the guest's kernel (-tags qemu) do not combine")
		}
	}
	if *knmstateBin != "" {
		cl.knmstate = *knmstateBin
	} else {
		build := exec.Command("go", "build", "-o", cl.knmstate, "github.com/knmstate/knmstate/cmd/knmstate")
		if out, err := build.CombinedOutput(); err != nil {
			return fail("building knmstate: %v\n%s", err, out)
		}
	}
	cl.dir = filepath.Join(os.TempDir(), "knmstate-e2e-"+cl.name)
	help, _ := exec.Command(cl.knmstate, "handler", "--help").CombinedOutput()
	cl.policyFlags = strings.Contains(string(help), "--max-retries")
	opts := lab.Options{
		Name: cl.name, Dir: cl.dir, Nodes: 3, Binary: cl.knmstate,
		APIServer: filepath.Join(root, "bin", "kube-apiserver"),
		Kubelet:   cl.kubelet,
		Kernel:    nodeKernel,
		Backend:   *backend,
	}
	if cl.kubelet {
		// As users install it: the operator bundle and an NMState.
		opts.Install = lab.InstallOperator
		opts.Images = *imagesDir
		if opts.Images == "" {
			opts.Images = filepath.Join(root, "bin", "images")
		}
		cl.images = opts.Images
	}
	if cl.policyFlags {
		opts.HandlerArgs = handlerArgs
	}
	// Down is registered before Up: a failed start is cleaned up too, and
	// what Down leaves behind fails the suite.
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.Down(ctx, cl.name, cl.dir); err != nil {
			code = fail("lab down: %v", err)
		}
		if left := lab.Leftovers(cl.name, cl.dir); len(left) > 0 {
			code = fail("lab down left behind: %v", left)
		}
		if _, err := os.Stat(cl.dir); !os.IsNotExist(err) {
			code = fail("lab down left its directory %s (%v)", cl.dir, err)
		}
	}()
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute*cl.slowdown)
	defer cancel()
	st, err := lab.Up(ctx, opts)
	if err != nil {
		return fail("lab up: %v", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: lab %s up in %v (kubelet mode: %v, nodes' kernel: %s, backend: %s, handler policy flags: %v)\n",
		cl.name, time.Since(begin).Round(time.Millisecond), cl.kubelet, kernelName(), st.Backend(), cl.policyFlags)
	cl.state, cl.kubeconfig = st, st.Kubeconfig
	c = cl
	return m.Run()
}

// kubectl runs the real kubectl against the lab and returns its standard
// output; a failure fails the test with kubectl's output.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kubectlErr(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlErr runs kubectl and returns its error (with its output) instead
// of failing.
func kubectlErr(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectlPath, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// nodeExec runs a command inside a node (its network, mount and UTS
// namespaces) with `knmstate lab exec`, as a user would, and returns its
// output.
func nodeExec(t testing.TB, node string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), c.knmstate, append([]string{"lab", "exec", "--dir", c.dir, node, "--"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lab exec %s -- %s: %v\n%s%s", node, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
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
	if err := json.Unmarshal([]byte(nodeExec(t, node, "ip", "-j", "-d", "link", "show")), &details); err != nil {
		t.Fatalf("node %s: ip -j link: %v", node, err)
	}
	if err := json.Unmarshal([]byte(nodeExec(t, node, "ip", "-j", "addr", "show")), &addrs); err != nil {
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

// eventually retries check (which reports what is still wrong, or "")
// until it is satisfied or timeout passes (stretched on the guest's
// kernel), then fails with the last complaint. For what settles after a
// condition is reported (DHCP leases arriving, the handler's state after
// a rollback).
func eventually(t testing.TB, timeout time.Duration, what string, check func() string) {
	t.Helper()
	timeout *= c.slowdown
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %s", what, timeout, msg)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v (last: %s)", what, t.Context().Err(), msg)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kernelName names the nodes' kernel for messages.
func kernelName() string {
	if nodeKernel == "" {
		return "this machine's"
	}
	return nodeKernel + " (qemu guest)"
}

// kubectlIn runs kubectl with stdin as its standard input.
func kubectlIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectlPath, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
