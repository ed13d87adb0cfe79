//go:build !notestbed

package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBenchCommandWritesJSON runs the cheapest measurement through the
// command: the table on stdout and the JSON file with the keys.
func TestBenchCommandWritesJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results", "latest.json")
	cmd := newBenchCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--only", "model.pipeline1000", "--runs", "1", "--json", out, "--lab-dir", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "model.pipeline1000") {
		t.Errorf("table lacks the row:\n%s", stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1: %s", len(rows), b)
	}
	keys := slices.Sorted(maps.Keys(rows[0]))
	want := []string{"baseline", "name", "note", "ratio", "target", "unit", "value"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// TestBenchCommandPrintsPreviousRun runs the cheapest measurement twice
// into the same JSON file: the second run reads the first's figure before
// overwriting it, and prints and writes it beside its own.
func TestBenchCommandPrintsPreviousRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "latest.json")
	run := func() (string, map[string]any) {
		t.Helper()
		cmd := newBenchCmd()
		var stdout, stderr bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"--only", "model.pipeline1000", "--runs", "1", "--json", out, "--lab-dir", t.TempDir()})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("rows %s: %v", b, err)
		}
		return stdout.String(), rows[0]
	}
	_, first := run()
	if _, ok := first["previous"]; ok {
		t.Errorf("first run has a previous figure: %v", first)
	}
	table, second := run()
	if second["previous"] != first["value"] {
		t.Errorf("second run's previous = %v, want the first run's value %v", second["previous"], first["value"])
	}
	if !strings.Contains(table, "PREVIOUS") {
		t.Errorf("table lacks the PREVIOUS column:\n%s", table)
	}
}

func TestBenchCommandRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--only", "engine.nope"}, `--only: unknown measurement "engine.nope"`},
		{[]string{"--runs", "-1"}, "--runs: -1 is negative"},
		{[]string{"--only", "model.pipeline1000", "--previous", "/nonexistent/prev.json"}, "--previous: open /nonexistent/prev.json"},
	} {
		cmd := newBenchCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to contain %q", c.args, err, c.want)
		}
	}
}
