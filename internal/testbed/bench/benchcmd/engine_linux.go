package benchcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/knmstate/knmstate/internal/testbed/bench"
)

// engineMeasurement wraps one of internal/testbed/bench's comparisons: the
// engine's median wall time against iproute2 doing the same kernel work.
func engineMeasurement(c bench.Named, defRuns int, target, note string) func(context.Context, Env) ([]Result, error) {
	return baselineMeasurement(c, defRuns, target, "iproute2", note)
}

// baselineMeasurement is engineMeasurement with the baseline named.
func baselineMeasurement(c bench.Named, defRuns int, target, baseline, note string) func(context.Context, Env) ([]Result, error) {
	return cpuMeasurement(c, defRuns, target, "", baseline, note)
}

// cpuMeasurement is baselineMeasurement that, with a cpuTarget, adds a
// second row NAME.cpu from the same runs: the median CPU time (user +
// system) of our process against that of the baseline's processes. CPU
// time is what a loaded machine changes least, and it counts the work
// done on other threads that the wall time hides (the checkpoint's
// encoding, the garbage collector).
func cpuMeasurement(c bench.Named, defRuns int, target, cpuTarget, baseline, note string) func(context.Context, Env) ([]Result, error) {
	return func(ctx context.Context, env Env) ([]Result, error) {
		res, err := c.Run(ctx, bench.Options{Runs: env.runs(defRuns)})
		if errors.Is(err, bench.ErrUnavailable) {
			return nil, notMeasurable("%v", err)
		}
		if err != nil {
			return nil, err
		}
		r := Result{Name: c.Name, Value: num(res.OursMedian.Seconds()), Unit: "s", Target: target}
		r = r.withRatio(res.BaselineMedian.Seconds())
		r.Note = fmt.Sprintf("median of %d, baseline %s; cpu %.4gs vs %.4gs (ratio %.2f)",
			len(res.Ours), baseline, res.OursCPU.Seconds(), res.BaselineCPU.Seconds(), res.CPURatio)
		if note != "" {
			r.Note += "; " + note
		}
		rows := []Result{r}
		if cpuTarget != "" {
			cpu := Result{Name: c.Name + ".cpu", Value: num(res.OursCPU.Seconds()), Unit: "s", Target: cpuTarget,
				Note: fmt.Sprintf("median CPU time (user+system) of the same %d runs, ours vs the %s processes", len(res.Ours), baseline)}
			rows = append(rows, cpu.withRatio(res.BaselineCPU.Seconds()))
		}
		return rows, nil
	}
}
