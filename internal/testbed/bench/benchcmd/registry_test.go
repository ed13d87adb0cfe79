package benchcmd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSelect(t *testing.T) {
	all := []Measurement{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	names := func(ms []Measurement) (out []string) {
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	got, err := Select(all, []string{"c", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "c"}, names(got)); diff != "" {
		t.Errorf("registry order (-want +got):\n%s", diff)
	}
	got, err = Select(all, nil)
	if err != nil || len(got) != 3 {
		t.Errorf("Select(nil) = %v, %v; want all three", names(got), err)
	}
	_, err = Select(all, []string{"a", "x"})
	if diff := cmp.Diff(`--only: unknown measurement "x" (known: a, b, c)`, errString(err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRunOutcomes checks how results, failures, measurements that cannot
// be taken and timeouts become rows.
func TestRunOutcomes(t *testing.T) {
	ms := []Measurement{
		{Name: "ok", Timeout: time.Minute, Run: func(context.Context, Env) ([]Result, error) {
			return []Result{{Name: "ok", Value: num(1), Unit: "s"}}, nil
		}},
		{Name: "missing", Timeout: time.Minute, Run: func(context.Context, Env) ([]Result, error) {
			return nil, notMeasurable("no reconciler")
		}},
		{Name: "partial", Timeout: time.Minute, Run: func(context.Context, Env) ([]Result, error) {
			return []Result{{Name: "partial.a", Value: num(2)}}, errors.New("boom")
		}},
		{Name: "slow", Timeout: time.Millisecond, Run: func(ctx context.Context, _ Env) ([]Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
	}
	rep := Run(context.Background(), ms, Env{})
	want := Report{
		Results: []Result{
			{Name: "ok", Value: num(1), Unit: "s"},
			{Name: "missing", Note: "not measurable: no reconciler"},
			{Name: "partial.a", Value: num(2)},
			{Name: "partial", Note: "failed: boom"},
			{Name: "slow", Note: "failed: timed out after 1ms: context deadline exceeded"},
		},
		Failed: []string{"partial", "slow"},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// TestRegistryRunsCheapMeasurement runs model.pipeline1000 from the real
// registry with a single run: the registry wires it and it yields its row
// (the figure itself is not judged).
func TestRegistryRunsCheapMeasurement(t *testing.T) {
	ms, err := Select(Measurements(), []string{"model.pipeline1000"})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(context.Background(), ms, Env{Runs: 1})
	if len(rep.Failed) > 0 || len(rep.Results) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	r := rep.Results[0]
	if r.Name != "model.pipeline1000" || r.Unit != "ns" || r.Value == nil || *r.Value <= 0 {
		t.Errorf("row: %+v", r)
	}
}

// TestPipelineInput keeps model.pipeline1000 honest: a small input of the
// same shape plans every interface, address and route.
func TestPipelineInput(t *testing.T) {
	ops, err := pipelineOnce(pipelineDesired(4, 3), pipelineCurrent())
	if err != nil {
		t.Fatal(err)
	}
	// 2 bridges, 2 VLANs: 4 link adds, 2 controllers, 4 ups, 2 sysctls,
	// 2 addresses; 3 routes.
	if ops != 17 {
		t.Errorf("plan has %d ops, want 17", ops)
	}
}
