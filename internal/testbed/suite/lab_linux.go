package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// downTimeout bounds a lab's Down at the end of a suite or a test.
const downTimeout = 2 * time.Minute

// Lab is a lab of a suite.
type Lab struct {
	Name, Dir string
	// State is the lab's as Up returned it (lab.ReadState has the newest).
	State *lab.State
	// Kubectl is the real kubectl against the lab.
	Kubectl Kubectl

	// attached: the lab was up before the suite (Attach); the suite does
	// not take it down.
	attached bool
	downOnce sync.Once
	downErr  error
}

// Up brings a lab up with opts, in which an empty Binary is the kit's
// knmstate, an empty APIServer the repository's bin/kube-apiserver, an
// empty Images (kubelet mode) the kit's images and an empty Dir
// lab.DefaultDir(Name). Its Down is registered with the kit before it
// starts (a failed start is taken down too): Main takes it down when the
// suite ends, unless the suite did (Lab.Down) before.
func (k *Kit) Up(ctx context.Context, opts lab.Options) (*Lab, error) {
	l, opts := k.prepare(opts)
	k.Defer(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
		defer cancel()
		return l.Down(ctx)
	})
	return l, k.up(ctx, l, opts)
}

// UpT is Up for one test: the lab is taken down when t ends, and what is
// left of it fails t; a failed start fails t at once.
func (k *Kit) UpT(t testing.TB, opts lab.Options) *Lab {
	t.Helper()
	l, opts := k.prepare(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
		defer cancel()
		if err := l.Down(ctx); err != nil {
			t.Error(err)
		}
	})
	if err := k.up(t.Context(), l, opts); err != nil {
		t.Fatal(err)
	}
	return l
}

func (k *Kit) prepare(opts lab.Options) (*Lab, lab.Options) {
	if opts.Binary == "" {
		opts.Binary = k.Knmstate
	}
	if opts.APIServer == "" {
		opts.APIServer = filepath.Join(k.Root, "bin", "kube-apiserver")
	}
	if opts.Kubelet && opts.Images == "" {
		opts.Images = k.Images
	}
	if opts.Dir == "" {
		opts.Dir = lab.DefaultDir(opts.Name)
	}
	return &Lab{Name: opts.Name, Dir: opts.Dir}, opts
}

func (k *Kit) up(ctx context.Context, l *Lab, opts lab.Options) error {
	begin := time.Now()
	st, err := lab.Up(ctx, opts)
	if err != nil {
		return fmt.Errorf("lab up %s: %w", l.Name, err)
	}
	l.State, l.Kubectl = st, Kubectl{Kubeconfig: st.Kubeconfig}
	k.Logf("lab %s up in %v (%d nodes, kubelet mode: %v, backend: %s)",
		l.Name, time.Since(begin).Round(time.Millisecond), len(st.Nodes), st.Kubelet, st.Backend())
	return nil
}

// Attach is a lab already running in dir, which the suite uses and leaves
// up (for working on a test without waiting for a lab each time).
func Attach(dir string) (*Lab, error) {
	st, err := lab.ReadState(dir)
	if err != nil {
		return nil, fmt.Errorf("attaching to the lab in %s: %w", dir, err)
	}
	return &Lab{Name: st.Name, Dir: st.Dir, State: st, Kubectl: Kubectl{Kubeconfig: st.Kubeconfig}, attached: true}, nil
}

// Down takes the lab down (once: later calls return the first's result)
// and returns an error naming what is left of it: processes, namespaces,
// mounts, cgroups, its directory.
func (l *Lab) Down(ctx context.Context) error {
	l.downOnce.Do(func() {
		if l.attached {
			return
		}
		var errs []error
		if err := lab.Down(ctx, l.Name, l.Dir); err != nil {
			errs = append(errs, fmt.Errorf("lab down %s: %w", l.Name, err))
		}
		if left := lab.Leftovers(l.Name, l.Dir); len(left) > 0 {
			errs = append(errs, fmt.Errorf("lab down %s left behind: %s", l.Name, strings.Join(left, "; ")))
		}
		l.downErr = errors.Join(errs...)
	})
	return l.downErr
}

// Nodes are the names of the lab's nodes.
func (l *Lab) Nodes() []string {
	var out []string
	for _, n := range l.State.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// Exec runs args in a node of the lab (its network, mount and UTS
// namespaces; through the guest's agent when the nodes run in a qemu
// guest) with stdin (none when empty) and returns its standard output; a
// failure or an exit status other than 0 is an error with the command's
// output.
func (l *Lab) Exec(ctx context.Context, node, stdin string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	var in io.Reader
	if stdin != "" {
		in = strings.NewReader(stdin)
	}
	code, err := lab.Exec(ctx, l.Dir, node, args, in, &stdout, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("lab exec %s -- %s: %w\n%s%s", node, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// MustExec is Exec without stdin under t's context that fails t on an
// error.
func (l *Lab) MustExec(t testing.TB, node string, args ...string) string {
	t.Helper()
	return l.MustExecIn(t, node, "", args...)
}

// MustExecIn is Exec under t's context that fails t on an error.
func (l *Lab) MustExecIn(t testing.TB, node, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := testContext(t)
	defer cancel()
	out, err := l.Exec(ctx, node, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ControlPlane starts a control plane of its own (etcd and kube-apiserver
// with the project's CRDs, no nodes) for the suites that need only the
// API; Main stops it when the suite ends.
func (k *Kit) ControlPlane(ctx context.Context) (*testenv.Env, error) {
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	k.Defer(func() error {
		if err := env.Stop(); err != nil {
			return fmt.Errorf("control plane: stop: %w", err)
		}
		return nil
	})
	k.Logf("control plane ready in %v", env.StartupDuration.Round(time.Millisecond))
	return env, nil
}
