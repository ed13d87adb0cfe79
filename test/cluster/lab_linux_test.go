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
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// kit is the suite's, from TestMain: the knmstate binary under test
// (-suite.knmstate, or built from cmd/knmstate) and the labs' mode
// (-suite.kubelet: real kubelets and the handler as pods from
// -suite.images; make test-kubelet runs the rollback tests this way).
var kit *suite.Kit

// handlerArgs are the handlerFlags the binary under test knows.
var handlerArgs []string

var (
	nnsGVR  = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkstates"}
	nnceGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkconfigurationenactments"}
	nncpGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
)

// sharedLabState is the 3-node lab most tests use, started by the first test that
// asks for it and removed by TestMain (or by a test that needs the
// machine's cores for a bigger lab).
var sharedLabState struct {
	mu  sync.Mutex
	lab *cluster
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "cluster", BuildKnmstate: true, NeedRoot: true}, func(k *suite.Kit) int {
		kit = k
		handlerArgs = knownHandlerFlags(k.Knmstate)
		code := m.Run()
		downShared()
		return code
	}))
}

// handlerFlags shorten the handler's probe timeouts and retries for the
// lab (upstream's minutes-long defaults would make a rollback test take
// minutes), and point the DNS probe at the lab's own zone: the lab has no
// Internet, so the default NS lookup of root-servers.net gets no answer and
// the DNS probe would never be selected. A flag is only passed when `knmstate
// handler --help` lists it (the policy side may not be wired in yet); the lab
// appends them to each handler's command line (Options.HandlerArgs).
var handlerFlags = []string{
	"--probe-ping-timeout=5s",
	"--probe-dns-timeout=5s",
	"--probe-api-timeout=10s",
	"--probe-node-timeout=10s",
	"--probe-dns-host=api.lab.example",
	"--max-retries=2",
	"--retry-backoff=500ms",
}

// knownHandlerFlags returns the handlerFlags that `knmstate handler
// --help` lists.
func knownHandlerFlags(bin string) []string {
	help, _ := exec.Command(bin, "handler", "--help").CombinedOutput()
	var flags []string
	for _, f := range handlerFlags {
		name, _, _ := strings.Cut(f, "=")
		if strings.Contains(string(help), name+" ") {
			flags = append(flags, f)
		}
	}
	return flags
}

// cluster is one running lab and the clients to reach it.
type cluster struct {
	name, dir string
	lab       *suite.Lab
	st        *lab.State
	cfg       *rest.Config
	c         client.Client
	dyn       dynamic.Interface
}

// sharedLab returns the shared 3-node lab, starting it if needed.
func sharedLab(t *testing.T) *cluster {
	t.Helper()
	sharedLabState.mu.Lock()
	defer sharedLabState.mu.Unlock()
	if sharedLabState.lab == nil {
		c, err := startLab(t.Context(), "s", 3, func(*suite.Lab) {})
		if err != nil {
			t.Fatal(err)
		}
		sharedLabState.lab = c
	}
	return sharedLabState.lab
}

// downShared removes the shared lab, if running.
func downShared() {
	sharedLabState.mu.Lock()
	defer sharedLabState.mu.Unlock()
	if sharedLabState.lab == nil {
		return
	}
	if err := sharedLabState.lab.lab.Down(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	sharedLabState.lab = nil
}

// newLab starts a lab of its own for one test, removed when the test ends.
func newLab(t *testing.T, tag string, nodes int) *cluster {
	t.Helper()
	c, err := startLab(t.Context(), tag, nodes, func(l *suite.Lab) {
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

// startLab brings a lab up with the kit, which takes it down when the
// suite ends unless owned (called with each lab started) does before. The
// lab is the fixture, not the subject: a start-up that fails (seen under
// load: a node runtime giving up on DHCPv6 for eth0) is retried once, and
// the first failure is printed.
func startLab(ctx context.Context, tag string, nodes int, owned func(*suite.Lab)) (*cluster, error) {
	opts := lab.Options{Name: "c" + strconv.Itoa(os.Getpid()) + tag, Nodes: nodes, Heartbeat: time.Second, HandlerArgs: handlerArgs,
		Kubelet: kit.Kubelet}
	return startLabWith(ctx, opts, owned)
}

// startLabWith is startLab with the lab's options given.
func startLabWith(ctx context.Context, opts lab.Options, owned func(*suite.Lab)) (*cluster, error) {
	nodes := opts.Nodes
	l, err := kit.Up(ctx, opts)
	owned(l)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab up (%d nodes) failed, retrying once: %v\n", nodes, err)
		if derr := l.Down(context.Background()); derr != nil {
			return nil, fmt.Errorf("%w; then %w", err, derr)
		}
		l, err = kit.Up(ctx, opts)
		owned(l)
	}
	if err != nil {
		return nil, fmt.Errorf("lab up (%d nodes): %w", nodes, err)
	}
	c := &cluster{name: l.Name, dir: l.Dir, lab: l, st: l.State}
	fail := func(err error) (*cluster, error) {
		_ = l.Down(context.Background())
		return nil, err
	}
	if c.cfg, err = clientcmd.BuildConfigFromFlags("", c.st.Kubeconfig); err != nil {
		return fail(err)
	}
	c.cfg.QPS, c.cfg.Burst = 200, 400 // 50 ms sampling must not be throttled
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, nmstatev1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fail(err)
		}
	}
	if c.c, err = client.New(c.cfg, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	if c.dyn, err = dynamic.NewForConfig(c.cfg); err != nil {
		return fail(err)
	}
	return c, nil
}

// node returns the lab's record of a node.
func (c *cluster) node(t testing.TB, name string) *lab.NodeState {
	t.Helper()
	n, err := c.st.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// handlerPID returns the PID of the node's running handler process, as
// the lab's supervisor publishes it (it changes when the handler restarts).
func (c *cluster) handlerPID(t testing.TB, node string) int {
	t.Helper()
	st, err := lab.ReadState(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Name == "handler/"+node && p.Status == "running" {
			return p.PID
		}
	}
	return 0
}

// handlerLog is the path of the node's handler log (process mode).
func (c *cluster) handlerLog(node string) string {
	return filepath.Join(c.dir, "nodes", node, "handler.log")
}

// handlerLogText is everything the node's handler logged: its log file,
// or in kubelet mode the container logs of every handler pod the node
// ran (the kubelet keeps them below the node's /var/log/pods).
func (c *cluster) handlerLogText(t testing.TB, node string) []byte {
	t.Helper()
	if !c.st.Kubelet {
		b, err := os.ReadFile(c.handlerLog(node))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files, err := filepath.Glob(filepath.Join(c.dir, "nodes", node, "var", "log", "pods", "nmstate_knmstate-handler-*", "handler", "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no handler pod logs on %s (%v)", node, err)
	}
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// stateDir is the node's handler state directory (checkpoint records): in
// kubelet mode the pod's hostPath below the node's /var/lib.
func (c *cluster) stateDir(node string) string {
	if c.st.Kubelet {
		return filepath.Join(c.dir, "nodes", node, "var", "lib", "knmstate")
	}
	return filepath.Join(c.dir, "nodes", node, "state")
}

// netlink returns a netlink handle in the node's network namespace.
func (c *cluster) netlink(t testing.TB, node string) *netlink.Handle {
	t.Helper()
	h, err := netns.GetFromName(c.node(t, node).NetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	return nl
}

// netSnapshot is what a node's routes and addresses are, one line each,
// sorted, without lifetimes and caches: what a rollback must restore. Routes
// learnt from router advertisements are left out (see snapshot).
type netSnapshot struct {
	Addresses []string
	Routes    []string
}

func snapshot(t testing.TB, nl *netlink.Handle) netSnapshot {
	t.Helper()
	var s netSnapshot
	links, err := nl.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	addrs, err := nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		s.Addresses = append(s.Addresses, fmt.Sprintf("%s dev %s", a.IPNet, names[a.LinkIndex]))
	}
	routes, err := nl.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Table == unix.RT_TABLE_LOCAL {
			continue // follows the addresses
		}
		if r.Protocol == unix.RTPROT_RA {
			// The kernel's from router advertisements: in the lab the IPv6
			// default route expires and comes back between advertisements,
			// with nobody touching the node.
			continue
		}
		dst := "default"
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones > 0 {
				dst = r.Dst.String()
			}
		}
		gw := ""
		if r.Gw != nil {
			gw = " via " + r.Gw.String()
		}
		s.Routes = append(s.Routes, fmt.Sprintf("table %d %s%s dev %s proto %d metric %d", r.Table, dst, gw, names[r.LinkIndex], r.Protocol, r.Priority))
	}
	slices.Sort(s.Addresses)
	slices.Sort(s.Routes)
	return s
}

// addrsOf returns the IPv4 addresses of a link in the node, empty when the
// link is missing.
func addrsOf(t testing.TB, nl *netlink.Handle, link string) []netip.Prefix {
	t.Helper()
	l, err := nl.LinkByName(link)
	if err != nil {
		return nil
	}
	addrs, err := nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP.To4())
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones))
	}
	return out
}

// rssKiB returns a process's resident set size (VmRSS) in KiB.
func rssKiB(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
