package suite

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// Options say what a suite needs before its tests run.
type Options struct {
	// Name names the suite in its messages ("e2e: lab up: ...").
	Name string
	// BuildKnmstate: without -suite.knmstate, build cmd/knmstate into the
	// kit's temporary directory; otherwise the suite runs the repository's
	// bin/knmstate (make build), which its images hold.
	BuildKnmstate bool
	// NeedRoot: the suite fails at once when not run as root (network
	// namespaces), rather than in its first test.
	NeedRoot bool
	// Require are files the suite runs (KubectlPath, a browser): a missing
	// one fails the suite before anything starts.
	Require []string
}

// Kit is what Main found and what it takes down when the suite ends.
type Kit struct {
	// Name is Options.Name.
	Name string
	// Root is the repository's root.
	Root string
	// Knmstate is the knmstate binary under test (-suite.knmstate).
	Knmstate string
	// Images is the directory of make images (-suite.images; default the
	// repository's bin/images).
	Images string
	// Kubelet: run the suite's labs in kubelet mode (-suite.kubelet).
	Kubelet bool
	// TempDir is the suite's temporary directory, removed by Main.
	TempDir string

	// teardown is what Main undoes when run returns, last first.
	teardown []func() error
}

// flags are the flags every suite reads, with the same names in each
// (make's -args lines pass them alike).
type flags struct {
	knmstate, images *string
	kubelet          *bool
}

func registerFlags(fs *flag.FlagSet) flags {
	return flags{
		knmstate: fs.String("suite.knmstate", "", "knmstate binary under test (make build); the one the images hold in kubelet mode"),
		images:   fs.String("suite.images", "", "directory of make images (default: the repository's bin/images)"),
		kubelet:  fs.Bool("suite.kubelet", false, "run the suite's labs in kubelet mode (knmstate as pods from -suite.images)"),
	}
}

// Main is a suite's TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Exit(suite.Main(m, suite.Options{Name: "e2e"}, func(k *suite.Kit) int {
//			... k.Up(ctx, opts) ...
//			return m.Run()
//		}))
//	}
//
// It parses the flags, finds the repository and the binaries, calls run
// (m.Run when run is nil), then takes down what run brought up with the
// kit, checks that nothing of it is left, and removes TempDir. Its result
// is the exit code: 1 when the suite could not start, when run's is not 0,
// or when something was left behind.
func Main(m *testing.M, opts Options, run func(*Kit) int) int {
	f := registerFlags(flag.CommandLine)
	flag.Parse()
	if run == nil {
		run = func(*Kit) int { return m.Run() }
	}
	k := &Kit{Name: opts.Name}
	code, err := k.main(opts, f, run)
	if err != nil {
		k.Logf("%v", err)
		return 1
	}
	return code
}

func (k *Kit) main(opts Options, f flags, run func(*Kit) int) (code int, err error) {
	if opts.NeedRoot && os.Geteuid() != 0 {
		return 0, errors.New("needs root (network namespaces): run it as root")
	}
	for _, p := range opts.Require {
		if _, err := os.Stat(p); err != nil {
			return 0, fmt.Errorf("%s is missing (make setup installs it): %w", p, err)
		}
	}
	if k.Root, err = testenv.FindRepoRoot(); err != nil {
		return 0, err
	}
	if k.TempDir, err = os.MkdirTemp("", "knmstate-"+opts.Name+"-"); err != nil {
		return 0, fmt.Errorf("temporary directory: %w", err)
	}
	absent := absentHostPaths()
	defer func() {
		if derr := k.down(); derr != nil {
			code, err = 1, derr
		}
		// Checked after every lab of the suite is down: a lab lives in
		// its own directories and never leaves anything on the machine.
		if made := madeHostPaths(absent); len(made) > 0 {
			code, err = 1, fmt.Errorf("the suite's labs left %s on the machine (a lab must keep every path under its own directory)", strings.Join(made, ", "))
		}
	}()
	k.Kubelet = *f.kubelet
	k.Knmstate, k.Images = *f.knmstate, *f.images
	if k.Images == "" {
		k.Images = filepath.Join(k.Root, "bin", "images")
	}
	if k.Knmstate == "" {
		k.Knmstate = filepath.Join(k.Root, "bin", "knmstate")
		if opts.BuildKnmstate {
			k.Knmstate = filepath.Join(k.TempDir, "knmstate")
			if err := k.buildKnmstate(); err != nil {
				return 0, err
			}
		}
	}
	return run(k), nil
}

func (k *Kit) buildKnmstate() error {
	cmd := exec.Command("go", "build", "-o", k.Knmstate, "./cmd/knmstate")
	cmd.Dir = k.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building knmstate: %w\n%s", err, out)
	}
	return nil
}

// down undoes the teardown, last first, then removes TempDir and checks
// it is gone.
func (k *Kit) down() error {
	var errs []error
	for _, f := range slices.Backward(k.teardown) {
		errs = append(errs, f())
	}
	k.teardown = nil
	if err := os.RemoveAll(k.TempDir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", k.TempDir, err))
	}
	if _, err := os.Stat(k.TempDir); !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("left behind: temporary directory %s (%v)", k.TempDir, err))
	}
	return errors.Join(errs...)
}

// Defer adds f to what Main undoes when the suite ends (after the labs
// brought up later are down); its error fails the suite.
func (k *Kit) Defer(f func() error) { k.teardown = append(k.teardown, f) }

// Logf writes a line of the suite's own to standard error (what TestMain
// reports outside any test).
func (k *Kit) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, k.Name+": "+format+"\n", args...)
}

// hostPaths are the machine's own places that Kubernetes components and
// container runtimes write to by default (kube-controller-manager's and
// the kubelet's volume plugin directory, the kubelet's and CNI's state,
// their configuration); a lab points every one of them into its own
// directory.
var hostPaths = []string{
	"/usr/libexec/kubernetes",
	"/var/lib/kubelet",
	"/var/lib/cni",
	"/etc/kubernetes",
	"/etc/cni/net.d",
	"/var/lib/containerd",
	// The handler DaemonSet's hostPath of upstream's lock directory.
	"/var/k8s_nmstate",
}

// absentHostPaths are the hostPaths missing before the suite starts.
func absentHostPaths() []string {
	var absent []string
	for _, p := range hostPaths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, p)
		}
	}
	return absent
}

// madeHostPaths are those of absent that exist now.
func madeHostPaths(absent []string) []string {
	var made []string
	for _, p := range absent {
		if _, err := os.Lstat(p); err == nil {
			made = append(made, p)
		}
	}
	return made
}
