package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
)

// Options tune a measurement.
type Options struct {
	// Runs is the number of timed runs per side (0 = 5).
	Runs int
	// IP is the iproute2 binary (default "ip").
	IP string
	// Dir is a scratch directory for batch files and the apply state
	// directory (default: a new temporary directory, removed afterwards).
	Dir string
	// Settle is the untimed pause before each timed run (0 = 200ms): the
	// kernel dismantles a deleted namespace's links in the background,
	// and that work would otherwise land in the next run's time.
	Settle time.Duration
}

func (o Options) withDefaults() Options {
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if o.IP == "" {
		o.IP = "ip"
	}
	if o.Settle <= 0 {
		o.Settle = 200 * time.Millisecond
	}
	return o
}

// Sample is one timed run: wall-clock time, and the CPU time (user +
// system) the measured side spent — this process for knmstate, the ip
// processes for iproute2. CPU time is the steadier figure on a loaded
// machine; kernel work done later in kernel threads counts for neither.
type Sample struct {
	Wall, CPU time.Duration
}

// Comparison is one benchmark's result: every run on both sides, the
// medians and the ratios ours/iproute2.
type Comparison struct {
	Name string
	// Ours and Baseline hold each run (knmstate, iproute2).
	Ours, Baseline []Sample
	// OursMedian and BaselineMedian are the medians of the wall times;
	// Ratio is OursMedian / BaselineMedian.
	OursMedian, BaselineMedian time.Duration
	Ratio                      float64
	// OursCPU, BaselineCPU and CPURatio are the same for CPU time.
	OursCPU, BaselineCPU time.Duration
	CPURatio             float64
	// Target is the ratio the issue asks for (at most).
	Target float64
}

// String renders the comparison on one line.
func (c *Comparison) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	return fmt.Sprintf("%s: wall knmstate %v, iproute2 %v, ratio %.2f; cpu knmstate %v, iproute2 %v, ratio %.2f (target <= %.1f, median of %d runs)",
		c.Name, r(c.OursMedian), r(c.BaselineMedian), c.Ratio, r(c.OursCPU), r(c.BaselineCPU), c.CPURatio, c.Target, len(c.Ours))
}

func newComparison(name string, target float64, ours, base []Sample) *Comparison {
	wall := func(l []Sample) (d []time.Duration) {
		for _, s := range l {
			d = append(d, s.Wall)
		}
		return d
	}
	cpu := func(l []Sample) (d []time.Duration) {
		for _, s := range l {
			d = append(d, s.CPU)
		}
		return d
	}
	c := &Comparison{Name: name, Ours: ours, Baseline: base, Target: target,
		OursMedian: median(wall(ours)), BaselineMedian: median(wall(base)),
		OursCPU: median(cpu(ours)), BaselineCPU: median(cpu(base))}
	if c.BaselineMedian > 0 {
		c.Ratio = float64(c.OursMedian) / float64(c.BaselineMedian)
	}
	if c.BaselineCPU > 0 {
		c.CPURatio = float64(c.OursCPU) / float64(c.BaselineCPU)
	}
	return c
}

// selfCPU is this process's CPU time so far (children excluded).
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU is the CPU time of a finished command.
func childCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// scratch returns the scratch directory and its cleanup.
func (o Options) scratch() (string, func(), error) {
	if o.Dir != "" {
		return o.Dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "knmstate-bench-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// ApplyOnce applies w.State with pkg/apply (open the backend, read,
// validate, merge, plan, checkpoint, execute, re-read and verify, commit)
// into a fresh namespace and returns the time that took. Namespace
// creation and removal are not timed.
func ApplyOnce(ctx context.Context, w *Workload, opts Options) (Sample, error) {
	o := opts.withDefaults()
	dir, done, err := o.scratch()
	if err != nil {
		return Sample{}, err
	}
	defer done()
	stateDir, err := os.MkdirTemp(dir, "state-")
	if err != nil {
		return Sample{}, err
	}
	defer os.RemoveAll(stateDir)
	ns, err := newNamespace(ctx, o.IP)
	if err != nil {
		return Sample{}, err
	}
	if err := settle(ctx, o.Settle); err != nil {
		return Sample{}, errors.Join(err, ns.remove())
	}
	d, err := applyInto(ctx, ns.Name, w, stateDir)
	return d, errors.Join(err, ns.remove())
}

func applyInto(ctx context.Context, netns string, w *Workload, stateDir string) (Sample, error) {
	// Each run applies its own copy of the workload's state, made before
	// the clock starts: preparing the input is not part of the apply, as
	// writing the batch file is not part of iproute2's time.
	desired := w.State.Clone()
	start, cpu := time.Now(), selfCPU()
	b, err := kernel.Open(ctx, kernel.Options{NetNS: netns})
	if err != nil {
		return Sample{}, err
	}
	defer b.Close()
	_, err = apply.Apply(ctx, b, desired, apply.Options{StateDir: stateDir, VerifyInterval: 20 * time.Millisecond})
	d := Sample{Wall: time.Since(start), CPU: selfCPU() - cpu}
	if err != nil {
		return Sample{}, fmt.Errorf("%s: apply: %w", w.Name, err)
	}
	return d, nil
}

// BatchOnce runs w.Batch with `ip -n NS -batch FILE` in a fresh namespace
// and returns the time the command took (writing the file and the
// namespace's creation and removal are not timed).
func BatchOnce(ctx context.Context, w *Workload, opts Options) (Sample, error) {
	o := opts.withDefaults()
	dir, done, err := o.scratch()
	if err != nil {
		return Sample{}, err
	}
	defer done()
	file, err := writeBatch(dir, w.Name, w.Batch)
	if err != nil {
		return Sample{}, err
	}
	defer os.Remove(file)
	ns, err := newNamespace(ctx, o.IP)
	if err != nil {
		return Sample{}, err
	}
	if err := settle(ctx, o.Settle); err != nil {
		return Sample{}, errors.Join(err, ns.remove())
	}
	cmd := exec.CommandContext(ctx, o.IP, "-n", ns.Name, "-batch", file)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := Sample{Wall: time.Since(start), CPU: childCPU(cmd)}
	if err != nil {
		err = fmt.Errorf("ip -batch %s: %w: %s", w.Name, err, strings.TrimSpace(string(out)))
	}
	return d, errors.Join(err, ns.remove())
}

func writeBatch(dir, name string, lines []string) (string, error) {
	f, err := os.CreateTemp(dir, name+"-*.batch")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// CompareApply alternates ApplyOnce and BatchOnce Runs times each.
func CompareApply(ctx context.Context, w *Workload, target float64, opts Options) (*Comparison, error) {
	o := opts.withDefaults()
	var ours, base []Sample
	for range o.Runs {
		d, err := ApplyOnce(ctx, w, o)
		if err != nil {
			return nil, err
		}
		ours = append(ours, d)
		d, err = BatchOnce(ctx, w, o)
		if err != nil {
			return nil, err
		}
		base = append(base, d)
	}
	return newComparison(w.Name, target, ours, base), nil
}

// Named is one comparison the bench command can run by name.
type Named struct {
	Name string
	Run  func(context.Context, Options) (*Comparison, error)
}

// Comparisons lists the engine comparisons in the order the bench command
// runs them.
func Comparisons() []Named {
	return []Named{
		{"engine.apply50", Apply50Compare},
		{"engine.show1000", Show1000Compare},
		{"engine.bridges1000", Bridges1000Compare},
		{"ovs.apply50", OVSApply50Compare},
		{"ovs.show50", OVSShow50Compare},
	}
}

// Apply50Compare is the apply benchmark (target ratio 1.2).
func Apply50Compare(ctx context.Context, opts Options) (*Comparison, error) {
	w, err := Apply50()
	if err != nil {
		return nil, err
	}
	c, err := CompareApply(ctx, w, 1.2, opts)
	if err != nil {
		return nil, err
	}
	c.Name = "engine.apply50"
	return c, nil
}

// Bridges1000Compare is engine.bridges1000: 1,000 bridges with one veth
// port and an address each, applied in one state (target ratio 1.0: no
// slower than iproute2).
func Bridges1000Compare(ctx context.Context, opts Options) (*Comparison, error) {
	w, err := Bridges(1000)
	if err != nil {
		return nil, err
	}
	c, err := CompareApply(ctx, w, 1.0, opts)
	if err != nil {
		return nil, err
	}
	c.Name = "engine.bridges1000"
	return c, nil
}

// ShowNamespace is a namespace filled by ShowSetup, for repeated Show
// measurements. Close removes it.
type ShowNamespace struct {
	ns *namespace
	ip string
}

// NewShowNamespace creates a namespace with links links and routes
// static routes (plus the kernel's own routes of the addresses).
func NewShowNamespace(ctx context.Context, links, routes int, opts Options) (*ShowNamespace, error) {
	o := opts.withDefaults()
	if links < 8 {
		return nil, fmt.Errorf("show namespace: at least 8 links, got %d", links)
	}
	dir, done, err := o.scratch()
	if err != nil {
		return nil, err
	}
	defer done()
	file, err := writeBatch(dir, "show-setup", ShowSetup(links, routes))
	if err != nil {
		return nil, err
	}
	defer os.Remove(file)
	ns, err := newNamespace(ctx, o.IP)
	if err != nil {
		return nil, err
	}
	if err := ns.batch(ctx, file); err != nil {
		return nil, errors.Join(err, ns.remove())
	}
	return &ShowNamespace{ns: ns, ip: o.IP}, nil
}

// Name is the namespace's name under /run/netns.
func (s *ShowNamespace) Name() string { return s.ns.Name }

// Close removes the namespace.
func (s *ShowNamespace) Close() error { return s.ns.remove() }

// ShowOnce opens the kernel backend on the namespace and reads its whole
// state, and returns the time that took.
func (s *ShowNamespace) ShowOnce(ctx context.Context) (Sample, error) {
	start, cpu := time.Now(), selfCPU()
	b, err := kernel.Open(ctx, kernel.Options{NetNS: s.ns.Name})
	if err != nil {
		return Sample{}, err
	}
	defer b.Close()
	if _, err := b.Show(ctx); err != nil {
		return Sample{}, fmt.Errorf("show: %w", err)
	}
	return Sample{Wall: time.Since(start), CPU: selfCPU() - cpu}, nil
}

// IPShowOnce runs `ip -j link show`, `ip -j addr show` and `ip -j route
// show table all` in the namespace, one after the other, reading their
// output, and returns the time the three took.
func (s *ShowNamespace) IPShowOnce(ctx context.Context) (Sample, error) {
	var cpu time.Duration
	start := time.Now()
	for _, args := range [][]string{{"link", "show"}, {"addr", "show"}, {"route", "show", "table", "all"}} {
		cmd := exec.CommandContext(ctx, s.ip, append([]string{"-n", s.ns.Name, "-j"}, args...)...)
		if _, err := cmd.Output(); err != nil {
			return Sample{}, fmt.Errorf("ip -j %s: %w", strings.Join(args, " "), err)
		}
		cpu += childCPU(cmd)
	}
	return Sample{Wall: time.Since(start), CPU: cpu}, nil
}

// Show1000Compare is the show benchmark: 1,000 links and 2,000
// routes, ours against the three `ip -j` commands (target ratio 1.0).
func Show1000Compare(ctx context.Context, opts Options) (*Comparison, error) {
	o := opts.withDefaults()
	s, err := NewShowNamespace(ctx, 1000, 2000, o)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var ours, base []Sample
	for range o.Runs {
		if err := settle(ctx, o.Settle); err != nil {
			return nil, err
		}
		d, err := s.ShowOnce(ctx)
		if err != nil {
			return nil, err
		}
		ours = append(ours, d)
		if err := settle(ctx, o.Settle); err != nil {
			return nil, err
		}
		d, err = s.IPShowOnce(ctx)
		if err != nil {
			return nil, err
		}
		base = append(base, d)
	}
	return newComparison("engine.show1000", 1.0, ours, base), nil
}

// settle waits d unless ctx ends first.
func settle(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
