package benchcmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/knmstate/knmstate/internal/testbed/lab"
)

var (
	nnsGVR  = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkstates"}
	nncpGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
	nnceGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkconfigurationenactments"}
)

// benchLab is one lab a measurement started.
type benchLab struct {
	name, dir string
	st        *lab.State
	kube      kubernetes.Interface
	dyn       dynamic.Interface
}

// startLab brings up a lab named kb-TAG with nodes nodes under
// env.LabDir. A lab of that name left by a killed run is removed first.
// The caller must call close, also when startLab fails.
func startLab(ctx context.Context, env Env, tag string, nodes int) (*benchLab, error) {
	return startLabWith(ctx, env, tag, lab.Options{Nodes: nodes})
}

// startLabWith is startLab with more options (kubelet mode); Name, Dir and
// Binary are set here.
func startLabWith(ctx context.Context, env Env, tag string, opts lab.Options) (*benchLab, error) {
	l := &benchLab{name: "kb-" + tag}
	l.dir = filepath.Join(env.LabDir, l.name)
	if err := os.MkdirAll(env.LabDir, 0o700); err != nil {
		return l, fmt.Errorf("lab dir: %w", err)
	}
	if left := lab.Leftovers(l.name, l.dir); len(left) > 0 {
		env.logf("bench: removing leftovers of an earlier lab %s: %s", l.name, strings.Join(left, "; "))
		if err := lab.Down(ctx, l.name, l.dir); err != nil {
			return l, fmt.Errorf("removing an earlier lab %s: %w", l.name, err)
		}
	}
	start := time.Now()
	opts.Name, opts.Dir, opts.Binary = l.name, l.dir, env.Binary
	st, err := lab.Up(ctx, opts)
	if err != nil {
		return l, err
	}
	env.logf("bench: lab %s with %d nodes up in %v (kubelet mode: %v)", l.name, opts.Nodes, time.Since(start).Round(time.Millisecond), opts.Kubelet)
	l.st = st
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		return l, fmt.Errorf("lab kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	if l.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return l, err
	}
	if l.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return l, err
	}
	return l, nil
}

// close takes the lab down; it runs without the measurement's context,
// which may have ended.
func (l *benchLab) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lab.Down(ctx, l.name, l.dir); err != nil {
		return fmt.Errorf("lab %s down: %w", l.name, err)
	}
	return nil
}

// withLab runs f on a fresh lab and always takes the lab down; a failing
// take-down is reported with f's error.
func withLab(ctx context.Context, env Env, tag string, nodes int, f func(*benchLab) ([]Result, error)) (rows []Result, err error) {
	l, err := startLab(ctx, env, tag, nodes)
	defer func() { err = errors.Join(err, l.close()) }()
	if err != nil {
		return nil, err
	}
	return f(l)
}

// handlerPIDs returns the running handler processes by node, read from
// the lab's state file (a restarted handler has a new PID).
func (l *benchLab) handlerPIDs() (map[string]int, error) {
	st, err := lab.ReadState(l.dir)
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	for _, p := range st.Processes {
		if node, ok := strings.CutPrefix(p.Name, "handler/"); ok && p.PID > 0 {
			pids[node] = p.PID
		}
	}
	if len(pids) == 0 {
		return nil, notMeasurable("the lab runs no handler (see %s)", filepath.Join(l.dir, "lab.log"))
	}
	return pids, nil
}

// processPID returns the PID of the lab process named name.
func (l *benchLab) processPID(name string) (int, error) {
	st, err := lab.ReadState(l.dir)
	if err != nil {
		return 0, err
	}
	for _, p := range st.Processes {
		if p.Name == name && p.PID > 0 {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("lab %s runs no process %s", l.name, name)
}

// kubectl runs kubectl against the lab with stdin.
func (l *benchLab) kubectl(ctx context.Context, stdin []byte, args ...string) error {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", l.st.Kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// requestCount is one series of the API server's apiserver_request_total.
type requestCount struct {
	verb, group, resource, subresource string
	n                                  float64
}

// writeVerbs are the request verbs that change objects.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// apiWrites reads the API server's request counters and returns the
// write requests. Counting at the server sees every request, also those
// that change nothing (a no-op update does not bump resourceVersion, so
// watching objects would miss it).
func (l *benchLab) apiWrites(ctx context.Context) ([]requestCount, error) {
	raw, err := l.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading API server metrics: %w", err)
	}
	return parseWrites(raw)
}

// parseWrites picks the write requests out of the API server's metrics
// text (Prometheus exposition format).
func parseWrites(raw []byte) ([]requestCount, error) {
	all, err := parseRequests(raw)
	return slices.DeleteFunc(all, func(c requestCount) bool { return !writeVerbs[c.verb] }), err
}

// parseRequests reads every series of apiserver_request_total out of the
// API server's metrics text.
func parseRequests(raw []byte) ([]requestCount, error) {
	var out []requestCount
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", sc.Text(), err)
		}
		c := requestCount{n: n}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "verb":
				c.verb = v
			case "group":
				c.group = v
			case "resource":
				c.resource = v
			case "subresource":
				c.subresource = v
			}
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// sumWrites adds up the counts keep selects.
func sumWrites(cs []requestCount, keep func(requestCount) bool) float64 {
	var n float64
	for _, c := range cs {
		if keep(c) {
			n += c.n
		}
	}
	return n
}

// isNNS selects writes of NodeNetworkStates (object and status).
func isNNS(c requestCount) bool { return c.group == "nmstate.io" && c.resource == "nodenetworkstates" }

// isKnmstateWrite selects writes knmstate's components make: everything
// but the lab's Node heartbeats (a kubelet's job) and leader-election
// leases.
func isKnmstateWrite(c requestCount) bool {
	return c.resource != "nodes" && c.resource != "leases"
}

// nnsText returns the reported state of a node's NNS as JSON text ("" if
// none yet).
func (l *benchLab) nnsText(ctx context.Context, node string) (string, error) {
	o, err := l.dyn.Resource(nnsGVR).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	cur, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "currentState")
	if !ok {
		return "", nil
	}
	b, err := (&unstructured.Unstructured{Object: map[string]any{"s": cur}}).MarshalJSON()
	return string(b), err
}

// waitFor polls cond every period until it is true, it fails, or ctx
// ends.
func waitFor(ctx context.Context, period time.Duration, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(period):
		}
	}
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rss is a process's resident memory from /proc/PID/status, in bytes:
// Total (VmRSS) = Anon (heap, stacks: the process's own) + File (pages of
// its binary and other files, shared with every process mapping them).
type rss struct{ Total, Anon, File float64 }

// rssOf reads the resident memory of a process.
func rssOf(pid int) (rss, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rss{}, err
	}
	var r rss
	fields := map[string]*float64{"VmRSS:": &r.Total, "RssAnon:": &r.Anon, "RssFile:": &r.File}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		for key, dst := range fields {
			if v, ok := strings.CutPrefix(line, key); ok {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				if err != nil {
					return rss{}, fmt.Errorf("%s of %d: %w", key, pid, err)
				}
				*dst = kb * 1024
				found++
			}
		}
	}
	if found != len(fields) {
		return rss{}, fmt.Errorf("pid %d: /proc status lacks VmRSS, RssAnon or RssFile", pid)
	}
	return r, nil
}

// note says what a figure of rssOf is made of.
func (r rss) note() string {
	return fmt.Sprintf("of it %.1f MiB anonymous (the process's own) and %.1f MiB file pages (mostly its binary, shared with other processes running it)",
		r.Anon/mib, r.File/mib)
}
