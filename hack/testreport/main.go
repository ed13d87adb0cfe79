// Command testreport is make test's reader of `go test -json`: it prints
// each package's result, fails the stage on a failed test, on a skip that
// test/skips.txt does not name with its reason, and on a package where a
// -run pattern matched no test, and writes the stage's tests and times to
// a JSON file (docs/testing.md). Usage:
//
//	go test -json ... | testreport -stage NAME -out bin/test-results/NAME.json
//	testreport -check bin/test-results/*.json
//
// -check reads the stages' files together: it prints the stage table and
// fails when a test that one stage skipped by the list (for that stage)
// passed in no other stage.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/testreport"
)

func main() {
	stage := flag.String("stage", "test", "the stage's name, in the summary line and the results file")
	skips := flag.String("skips", "test/skips.txt", "the reviewed list of allowed skips")
	out := flag.String("out", "", "where to write the stage's results as JSON (none when empty)")
	slow := flag.Duration("slow", 20*time.Second, "tests at least this slow get a line of their own")
	check := flag.Bool("check", false, "read the result files given as arguments together instead of go test's output")
	flag.Parse()
	if *check {
		if err := checkAll(*skips, flag.Args()); err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*stage, *skips, *out, *slow); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		os.Exit(1)
	}
}

func readAllowed(path string) (testreport.Allowed, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the list of allowed skips: %w", err)
	}
	defer f.Close()
	allowed, err := testreport.ParseAllowed(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return allowed, nil
}

func checkAll(skipsPath string, files []string) error {
	allowed, err := readAllowed(skipsPath)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("-check: no result files")
	}
	var reports []*testreport.Report
	var tp, tf, ts int
	fmt.Printf("%-12s %8s %8s %8s %10s\n", "stage", "passed", "failed", "skipped", "pkg time")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading results: %w", err)
		}
		rep := &testreport.Report{}
		if err := json.Unmarshal(b, rep); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		reports = append(reports, rep)
		p, f, s := rep.Counts()
		tp, tf, ts = tp+p, tf+f, ts+s
		var sum float64
		for _, pk := range rep.Packages {
			sum += pk.Elapsed
		}
		fmt.Printf("%-12s %8d %8d %8d %9.0fs\n", rep.Stage, p, f, s, sum)
	}
	why := testreport.Unran(allowed, reports)
	for _, w := range why {
		fmt.Printf("check: %s\n", w)
	}
	fmt.Printf("stages: %d passed, %d failed, %d skipped\n", tp, tf, ts)
	if len(why) > 0 {
		return fmt.Errorf("%d tests skipped by the list ran in no stage", len(why))
	}
	return nil
}

func run(stage, skipsPath, outPath string, slow time.Duration) error {
	allowed, err := readAllowed(skipsPath)
	if err != nil {
		return err
	}
	start := time.Now()
	r := testreport.NewReader(stage, allowed, os.Stdout, slow)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		r.Line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading go test's output: %w", err)
	}
	rep := r.Report()
	if outPath != "" {
		if err := writeJSON(outPath, rep); err != nil {
			return err
		}
	}
	passed, failed, skipped := rep.Counts()
	why := rep.Failed()
	for _, w := range why {
		fmt.Printf("%s: %s\n", stage, w)
	}
	fmt.Printf("stage %s took %s; %d skips named by %s\n", stage, time.Since(start).Round(time.Second), len(rep.Listed), skipsPath)
	// The closing line alone, in the plain form CI reads.
	fmt.Printf("%s: %d passed, %d failed, %d skipped\n", stage, passed, failed, skipped)
	if len(why) > 0 {
		return fmt.Errorf("stage %s failed (%d reasons above)", stage, len(why))
	}
	return nil
}

func writeJSON(path string, rep *testreport.Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}
