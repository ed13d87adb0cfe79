//go:build kubelet

package faults

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var (
	knmstateBin = flag.String("faults.knmstate", "", "knmstate binary the images hold (make build); default the repository's bin/knmstate")
	imagesDir   = flag.String("faults.images", "", "images of make images; default the repository's bin/images")
	// reuseDir runs the cases on a kubelet lab already up (started with
	// the handler arguments below), left up afterwards: for working on a
	// case without waiting for a lab each time.
	reuseDir = flag.String("faults.lab-dir", "", "directory of a running 5-node kubelet lab to use instead of starting one")
)

// nodeCount and maxUnavailable are the issue's: a rollout to 5 nodes, at
// most 2 applying at once.
const (
	nodeCount      = 5
	maxUnavailable = 2
)

// handlerArgs keep a failing apply short (upstream's probe timeouts are
// minutes) and point the DNS probe at the lab's own zone; two attempts
// per generation, as a quick safety net.
var handlerArgs = []string{
	"--probe-ping-timeout=5s",
	"--probe-dns-timeout=5s",
	"--probe-api-timeout=10s",
	"--probe-node-timeout=10s",
	"--probe-dns-host=api.lab.example",
	"--max-retries=2",
	"--retry-backoff=1s",
}

// suite is the lab every case shares; cases are isolated by their own
// policy names and by reset (policies deleted, nodes put back).
type suite struct {
	name, dir string
	knmstate  string
	st        *lab.State
	cfg       *rest.Config
	c         client.Client
	dyn       dynamic.Interface
	nodes     []string
}

var s *suite

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "faults: "+format+"\n", args...)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail("needs root (network namespaces, a kubelet lab)")
	}
	root, err := testenv.FindRepoRoot()
	if err != nil {
		return fail("%v", err)
	}
	bin, images := *knmstateBin, *imagesDir
	if bin == "" {
		bin = filepath.Join(root, "bin", "knmstate")
	}
	if images == "" {
		images = filepath.Join(root, "bin", "images")
	}
	if *reuseDir != "" {
		st, err := lab.ReadState(*reuseDir)
		if err != nil {
			return fail("%v", err)
		}
		s = &suite{name: st.Name, dir: st.Dir, knmstate: bin, st: st}
		return s.run(m)
	}
	name := fmt.Sprintf("f%d", os.Getpid())
	dir := filepath.Join(os.TempDir(), "knmstate-faults-"+name)
	// lab down even when Up fails half-way or a test panics.
	defer func() {
		if err := lab.Down(context.Background(), name, dir); err != nil {
			fmt.Fprintf(os.Stderr, "faults: lab down: %v\n", err)
		}
	}()
	begin := time.Now()
	st, err := lab.Up(context.Background(), lab.Options{
		Name: name, Dir: dir, Nodes: nodeCount, Binary: bin, Images: images,
		Kubelet: true, Heartbeat: time.Second, HandlerArgs: handlerArgs,
	})
	if err != nil {
		return fail("lab up: %v", err)
	}
	fmt.Fprintf(os.Stderr, "FIGURE lab-up=%v nodes=%d\n", time.Since(begin).Round(time.Millisecond), nodeCount)
	s = &suite{name: name, dir: dir, knmstate: bin, st: st}
	return s.run(m)
}

func (s *suite) run(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "faults: "+format+"\n", args...)
		return 1
	}
	if err := s.connect(); err != nil {
		return fail("%v", err)
	}
	for _, n := range s.st.Nodes {
		s.nodes = append(s.nodes, n.Name)
	}
	if err := s.prepareBadNodes(context.Background()); err != nil {
		return fail("%v", err)
	}
	return m.Run()
}

func (s *suite) connect() error {
	var err error
	if s.cfg, err = clientcmd.BuildConfigFromFlags("", s.st.Kubeconfig); err != nil {
		return err
	}
	// The burst creates 200 policies within seconds; the watcher lists.
	s.cfg.QPS, s.cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, nmstatev1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if s.c, err = client.New(s.cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	s.dyn, err = dynamic.NewForConfig(s.cfg)
	return err
}

// exec runs a command in a node's namespaces (lab exec) and returns its
// output.
func (s *suite) exec(ctx context.Context, node string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	code, err := lab.Exec(ctx, s.dir, node, args, nil, &out, &errb)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return out.String(), fmt.Errorf("lab exec %s %s: %w: %s", node, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// inSwitch runs a command in the lab switch's network namespace.
func (s *suite) inSwitch(ctx context.Context, args ...string) error {
	out, err := execCommand(ctx, "nsenter", append([]string{"--net=/run/netns/knml-" + s.name + "_switch", "--"}, args...)...)
	if err != nil {
		return fmt.Errorf("in the switch namespace: %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
