//go:build !notestbed

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/testbed/bench/benchcmd"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// benchOptions are the flags of `knmstate bench`.
type benchOptions struct {
	only     []string
	json     string
	runs     int
	labDir   string
	previous string
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure knmstate against its baselines",
		Long: `Run the benchmark measurements (see bench/README.md), print a table
(name, value, unit, baseline, ratio, target, note) and optionally write
the same rows as JSON. Needs root: the measurements create network
namespaces and local labs, and remove them again.`,
		Example: `  knmstate bench --only engine.apply50,model.pipeline1000
  knmstate bench --json bench/results/latest.json
  knmstate bench --only engine.apply50 --previous bench/results/before.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.only, "only", nil, "run only these measurements (comma-separated): "+strings.Join(measurementNames(), ", "))
	f.StringVar(&o.json, "json", "", "also write the results as JSON to this file")
	f.IntVar(&o.runs, "runs", 0, "repetitions per measurement (default: each measurement's own, usually 5)")
	f.StringVar(&o.previous, "previous", "", "results of a previous run (JSON as --json writes it) to print beside this run's; default: the --json file as it was before this run, when it exists")
	f.StringVar(&o.labDir, "lab-dir", filepath.Join(os.TempDir(), "knmstate-bench"), "directory for the labs of the lab-based measurements")
	return cmd
}

func measurementNames() []string {
	var names []string
	for _, m := range benchcmd.Measurements() {
		names = append(names, m.Name)
	}
	return names
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	if o.runs < 0 {
		return fmt.Errorf("--runs: %d is negative", o.runs)
	}
	ms, err := benchcmd.Select(benchcmd.Measurements(), o.only)
	if err != nil {
		return err
	}
	labDir, err := filepath.Abs(o.labDir)
	if err != nil {
		return fmt.Errorf("--lab-dir: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// examples/ is read from the checkout; without one the policy
	// measurements say they cannot run.
	root, _ := testenv.FindRepoRoot()
	// Read before the run: the default previous file is the one this run
	// overwrites.
	prev, err := readPrevious(o)
	if err != nil {
		return err
	}
	env := benchcmd.Env{Runs: o.runs, LabDir: labDir, Binary: exe, RepoRoot: root, Log: cmd.ErrOrStderr()}
	start := time.Now()
	rep := benchcmd.Run(cmd.Context(), ms, env)
	rep.Results = benchcmd.WithPrevious(rep.Results, prev)
	var table bytes.Buffer
	if err := benchcmd.WriteTable(&table, rep.Results); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s(%d measurements in %v)\n", table.String(), len(ms), time.Since(start).Round(time.Second))
	if o.json != "" {
		if err := writeResultsFile(o.json, rep.Results); err != nil {
			return err
		}
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("bench: %d measurements failed: %s", len(rep.Failed), strings.Join(rep.Failed, ", "))
	}
	return nil
}

// readPrevious reads the previous run's rows: --previous, which must
// exist, or else the --json file when there is one.
func readPrevious(o benchOptions) ([]benchcmd.Result, error) {
	path, must := o.previous, true
	if path == "" {
		path, must = o.json, false
	}
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !must {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--previous: %w", err)
	}
	defer f.Close()
	rows, err := benchcmd.ReadResults(f)
	if err != nil {
		return nil, fmt.Errorf("--previous %s: %w", path, err)
	}
	return rows, nil
}

// writeResultsFile writes the JSON rows, creating the file's directory.
func writeResultsFile(path string, results []benchcmd.Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	var b bytes.Buffer
	if err := benchcmd.WriteJSON(&b, results); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
