package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/benchcmd"
	"github.com/knmstate/knmstate/internal/testenv"
)

// benchOptions are the flags of `knmstate bench`.
type benchOptions struct {
	only   []string
	json   string
	runs   int
	labDir string
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
  knmstate bench --json bench/results/latest.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.only, "only", nil, "run only these measurements (comma-separated): "+strings.Join(measurementNames(), ", "))
	f.StringVar(&o.json, "json", "", "also write the results as JSON to this file")
	f.IntVar(&o.runs, "runs", 0, "repetitions per measurement (default: each measurement's own, usually 5)")
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
	env := benchcmd.Env{Runs: o.runs, LabDir: labDir, Binary: exe, RepoRoot: root, Log: cmd.ErrOrStderr()}
	start := time.Now()
	rep := benchcmd.Run(cmd.Context(), ms, env)
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
