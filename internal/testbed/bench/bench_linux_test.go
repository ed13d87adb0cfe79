package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// testNamespace creates a namespace removed by t.Cleanup.
func testNamespace(t testing.TB) *namespace {
	t.Helper()
	ns, err := newNamespace(context.Background(), "ip")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.remove(); err != nil {
			t.Errorf("removing namespace %s: %v", ns.Name, err)
		}
	})
	return ns
}

func showNS(t testing.TB, name string) *nmstate.State {
	t.Helper()
	b, err := kernel.Open(context.Background(), kernel.Options{NetNS: name})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// summary is what both sides of a comparison must produce alike: every
// link with its kind, state, controller, MTU and IPv4 addresses, and every
// route the kernel shows.
type summary struct {
	Links  []string
	Routes []string
}

func summarize(s *nmstate.State) summary {
	var out summary
	for _, i := range s.Interfaces {
		if i.Type.IsUserSpace() {
			continue
		}
		ctl, mtu := "", uint64(0)
		if i.Controller != nil {
			ctl = *i.Controller
		}
		if i.MTU != nil {
			mtu = *i.MTU
		}
		var addrs []string
		if i.IPv4 != nil {
			for _, a := range i.IPv4.Address {
				addrs = append(addrs, a.Prefix().String())
			}
		}
		stp := ""
		if br := i.LinuxBridge; br != nil && br.Options != nil && br.Options.STP != nil && br.Options.STP.Enabled != nil {
			stp = fmt.Sprintf(" stp=%v", *br.Options.STP.Enabled)
		}
		out.Links = append(out.Links, fmt.Sprintf("%s %s %s controller=%q mtu=%d%s %v", i.Name, i.Type, i.State, ctl, mtu, stp, addrs))
	}
	if s.Routes != nil {
		for _, r := range s.Routes.Running {
			text := fmt.Sprintf("%v", nmstate.RouteReplace{Route: r})
			out.Routes = append(out.Routes, text)
		}
	}
	sort.Strings(out.Links)
	sort.Strings(out.Routes)
	return out
}

// TestWorkloadBatchMakesTheSameState checks that each workload's ip batch
// is the same kernel work as its state: applied into two fresh namespaces,
// the engine and iproute2 leave identical links, addresses and routes.
func TestWorkloadBatchMakesTheSameState(t *testing.T) {
	small, err := Bridges(20)
	if err != nil {
		t.Fatal(err)
	}
	a50, err := Apply50()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Workload{a50, small} {
		t.Run(w.Name, func(t *testing.T) {
			ours, theirs := testNamespace(t), testNamespace(t)
			if _, err := applyInto(context.Background(), ours.Name, w, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			file, err := writeBatch(t.TempDir(), w.Name, w.Batch)
			if err != nil {
				t.Fatal(err)
			}
			if err := theirs.batch(context.Background(), file); err != nil {
				t.Fatal(err)
			}
			want, got := summarize(showNS(t, theirs.Name)), summarize(showNS(t, ours.Name))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("engine vs ip -batch (-ip +engine):\n%s", diff)
			}
			if len(got.Links) < len(w.State.Interfaces) {
				t.Errorf("%d links shown, the state has %d interfaces", len(got.Links), len(w.State.Interfaces))
			}
			if w.State.Routes != nil && len(got.Routes) < len(w.State.Routes.Config) {
				t.Errorf("%d routes shown, the state has %d", len(got.Routes), len(w.State.Routes.Config))
			}
			t.Logf("%d links, %d routes alike", len(got.Links), len(got.Routes))
		})
	}
}

// TestShowSetupSize checks the Show namespace holds what it is said to.
func TestShowSetupSize(t *testing.T) {
	s, err := NewShowNamespace(context.Background(), 40, 80, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := showNS(t, s.Name())
	links := 0
	for _, i := range st.Interfaces {
		if !i.Type.IsUserSpace() && i.Name != "lo" {
			links++
		}
	}
	static := 0
	for _, r := range st.Routes.Running {
		if r.Destination != nil && r.Destination.Addr().Is4() && r.Destination.Addr().As4()[0] == 100 {
			static++
		}
	}
	if diff := cmp.Diff([2]int{40, 80}, [2]int{links, static}); diff != "" {
		t.Errorf("links, static routes (-want +got):\n%s", diff)
	}
	if _, err := s.ShowOnce(context.Background()); err != nil {
		t.Error(err)
	}
	if _, err := s.IPShowOnce(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestMedian pins the median of odd and even run counts.
func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(3, 1, 2), 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 2500 * time.Microsecond},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// reportEach runs once per b.N iteration and reports the mean wall time
// it measured as ns/op and the mean CPU time as cpu-ns/op (setup and
// teardown are excluded).
func reportEach(b *testing.B, once func() (Sample, error)) {
	b.StopTimer()
	var wall, cpu time.Duration
	for range b.N {
		d, err := once()
		if err != nil {
			b.Fatal(err)
		}
		wall += d.Wall
		cpu += d.CPU
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func workload(b *testing.B, f func() (*Workload, error)) *Workload {
	w, err := f()
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func BenchmarkApply50(b *testing.B) {
	w := workload(b, Apply50)
	reportEach(b, func() (Sample, error) { return ApplyOnce(context.Background(), w, Options{}) })
}

func BenchmarkIPBatch50(b *testing.B) {
	w := workload(b, Apply50)
	reportEach(b, func() (Sample, error) { return BatchOnce(context.Background(), w, Options{}) })
}

func BenchmarkApplyBridges1000(b *testing.B) {
	w := workload(b, func() (*Workload, error) { return Bridges(1000) })
	reportEach(b, func() (Sample, error) { return ApplyOnce(context.Background(), w, Options{}) })
}

func BenchmarkIPBatchBridges1000(b *testing.B) {
	w := workload(b, func() (*Workload, error) { return Bridges(1000) })
	reportEach(b, func() (Sample, error) { return BatchOnce(context.Background(), w, Options{}) })
}

func showNamespace(b *testing.B) *ShowNamespace {
	s, err := NewShowNamespace(context.Background(), 1000, 2000, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

func BenchmarkShow1000(b *testing.B) {
	s := showNamespace(b)
	reportEach(b, func() (Sample, error) { return s.ShowOnce(context.Background()) })
}

func BenchmarkIPShow1000(b *testing.B) {
	s := showNamespace(b)
	reportEach(b, func() (Sample, error) { return s.IPShowOnce(context.Background()) })
}

// TestMain leaves no namespace of this process behind, even when a
// benchmark fails half-way.
func TestMain(m *testing.M) {
	code := m.Run()
	if leftovers, err := ownNamespaces(); err == nil && len(leftovers) > 0 {
		fmt.Fprintf(os.Stderr, "bench: namespaces left behind: %v\n", leftovers)
		for _, n := range leftovers {
			_ = (&namespace{ip: "ip", Name: n}).remove()
		}
		code = 1
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
	}
	os.Exit(code)
}

func ownNamespaces() ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("%s%d-", nsPrefix, os.Getpid())
	var out []string
	for _, e := range entries {
		if len(e.Name()) > len(prefix) && e.Name()[:len(prefix)] == prefix {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// BenchmarkCompare runs the comparisons as the bench command does, with
// b.N runs per side, and reports the medians and the ratio ours/iproute2
// (go test ./internal/testbed/bench -run '^$' -bench Compare -benchtime 5x).
func BenchmarkCompare(b *testing.B) {
	for _, c := range Comparisons() {
		b.Run(strings.TrimPrefix(c.Name, "engine."), func(b *testing.B) {
			b.StopTimer()
			res, err := c.Run(context.Background(), Options{Runs: b.N})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.OursMedian.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(res.BaselineMedian.Nanoseconds()), "ip-ns/op")
			b.ReportMetric(res.Ratio, "ratio")
			b.ReportMetric(float64(res.OursCPU.Nanoseconds()), "cpu-ns/op")
			b.ReportMetric(float64(res.BaselineCPU.Nanoseconds()), "ip-cpu-ns/op")
			b.ReportMetric(res.CPURatio, "cpu-ratio")
			b.Logf("%s\n  knmstate runs: %v\n  iproute2 runs: %v", res, res.Ours, res.Baseline)
		})
	}
}

// BenchmarkApplyPhases logs where an apply's time goes, per workload
// (go test ./internal/testbed/bench -run '^$' -bench ApplyPhases -benchtime 1x -v).
func BenchmarkApplyPhases(b *testing.B) {
	for _, f := range []func() (*Workload, error){Apply50, func() (*Workload, error) { return Bridges(1000) }} {
		w := workload(b, f)
		b.Run(w.Name, func(b *testing.B) {
			b.StopTimer()
			for range b.N {
				phases, err := ApplyPhases(context.Background(), w, Options{})
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range phases {
					b.Logf("%-36s wall %-12v cpu %v", p.Name, p.Wall.Round(10*time.Microsecond), p.CPU)
				}
			}
		})
	}
}

// TestApply50CompareRunsEndToEnd runs the bench command's path once: one
// run per side, both measured (no judgement of the figures).
func TestApply50CompareRunsEndToEnd(t *testing.T) {
	c, err := Apply50Compare(context.Background(), Options{Runs: 1, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ours) != 1 || len(c.Baseline) != 1 || c.OursMedian <= 0 || c.BaselineMedian <= 0 || c.Ratio <= 0 {
		t.Errorf("incomplete comparison: %+v", c)
	}
	t.Log(c)
}
