//go:build kubelet

package faults

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// reuseDir runs the cases on a kubelet lab already up (started with the
// handler arguments below), left up afterwards: for working on a case
// without waiting for a lab each time.
var reuseDir = flag.String("faults.lab-dir", "", "directory of a running 5-node kubelet lab to use instead of starting one")

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
type fixture struct {
	name, dir string
	knmstate  string
	lab       *suite.Lab
	st        *lab.State
	cfg       *rest.Config
	c         client.Client
	dyn       dynamic.Interface
	nodes     []string
}

var s *fixture

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "faults", NeedRoot: true}, func(k *suite.Kit) int {
		l, err := faultsLab(k)
		if err != nil {
			k.Logf("%v", err)
			return 1
		}
		s = &fixture{name: l.Name, dir: l.Dir, knmstate: k.Knmstate, lab: l, st: l.State}
		return s.run(m)
	}))
}

// faultsLab is the lab of -faults.lab-dir, or a new one the kit takes
// down when the suite ends.
func faultsLab(k *suite.Kit) (*suite.Lab, error) {
	if *reuseDir != "" {
		return suite.Attach(*reuseDir)
	}
	begin := time.Now()
	l, err := k.Up(context.Background(), lab.Options{
		Name: fmt.Sprintf("f%d", os.Getpid()), Nodes: nodeCount,
		Kubelet: true, Heartbeat: time.Second, HandlerArgs: handlerArgs,
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "FIGURE lab-up=%v nodes=%d\n", time.Since(begin).Round(time.Millisecond), nodeCount)
	return l, nil
}

func (s *fixture) run(m *testing.M) int {
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

func (s *fixture) connect() error {
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

// inSwitch runs a command in the lab switch's network namespace.
func (s *fixture) inSwitch(ctx context.Context, args ...string) error {
	out, err := execCommand(ctx, "nsenter", append([]string{"--net=/run/netns/knml-" + s.name + "_switch", "--"}, args...)...)
	if err != nil {
		return fmt.Errorf("in the switch namespace: %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
