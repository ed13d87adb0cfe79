// Package testreport reads `go test -json` (test2json) events and decides
// whether a stage of make test passed: every test passed, and nothing was
// skipped that the reviewed list (test/skips.txt) does not name with its
// reason, and no package ran no test because a -run pattern matched
// nothing. It also keeps every test's name and time, for the stage ledger
// of docs/testing.md and the before/after comparison of test names.
package testreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Event is one test2json event (cmd/test2json's documented fields).
type Event struct {
	Time       time.Time `json:",omitempty"`
	Action     string
	Package    string  `json:",omitempty"`
	Test       string  `json:",omitempty"`
	Elapsed    float64 `json:",omitempty"`
	Output     string  `json:",omitempty"`
	ImportPath string  `json:",omitempty"` // build-output, build-fail
}

// Result is the outcome of one test or package.
type Result struct {
	Package string  `json:"package"`
	Test    string  `json:"test,omitempty"`
	Action  string  `json:"action"` // pass, fail, skip
	Elapsed float64 `json:"elapsed"`
	Reason  string  `json:"reason,omitempty"` // a skip's message
}

// Report is what one stage ran.
type Report struct {
	Stage    string   `json:"stage"`
	Packages []Result `json:"packages"`
	Tests    []Result `json:"tests"`
	// NoTests lists the packages that ran no test although they have
	// test files: a -run pattern that matched nothing there.
	NoTests []string `json:"noTests,omitempty"`
	// Unlisted are skips that test/skips.txt does not name; Listed, skips
	// it names.
	Unlisted []Result `json:"unlisted,omitempty"`
	Listed   []Result `json:"listed,omitempty"`
	// BuildFailed lists packages whose test binary did not build.
	BuildFailed []string `json:"buildFailed,omitempty"`
}

// Failed says why the stage failed, or nothing when it passed.
func (r *Report) Failed() []string {
	var why []string
	for _, t := range r.Tests {
		if t.Action == "fail" {
			why = append(why, fmt.Sprintf("%s %s failed", t.Package, t.Test))
		}
	}
	for _, p := range r.Packages {
		if p.Action == "fail" {
			why = append(why, fmt.Sprintf("%s failed", p.Package))
		}
	}
	for _, p := range r.BuildFailed {
		why = append(why, fmt.Sprintf("%s: test binary did not build", p))
	}
	for _, s := range r.Unlisted {
		why = append(why, fmt.Sprintf("%s %s skipped, and test/skips.txt does not name it: %s", s.Package, s.Test, s.Reason))
	}
	for _, p := range r.NoTests {
		why = append(why, fmt.Sprintf("%s ran no test: a -run pattern matched nothing there", p))
	}
	return why
}

// Counts are the tests passed, failed and skipped, subtests included.
func (r *Report) Counts() (passed, failed, skipped int) {
	for _, t := range r.Tests {
		switch t.Action {
		case "pass":
			passed++
		case "fail":
			failed++
		case "skip":
			skipped++
		}
	}
	return passed, failed, skipped
}

// Allowed is the reviewed list of skips: stage → package import path →
// test name → reason. The stage "*" allows the skip in every stage.
type Allowed map[string]map[string]map[string]string

// Reason is why the list allows pkg's test to skip in stage, and whether
// it does.
func (a Allowed) Reason(stage, pkg, test string) (string, bool) {
	for _, s := range []string{stage, "*"} {
		if r, ok := a[s][pkg][test]; ok {
			return r, true
		}
	}
	return "", false
}

// ParseAllowed reads test/skips.txt: one skip a line, `STAGE PACKAGE TEST
// REASON`, with blank lines and # comments ignored; every entry needs a
// reason.
func ParseAllowed(r io.Reader) (Allowed, error) {
	a := Allowed{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want STAGE PACKAGE TEST REASON, got %q", n, line)
		}
		stage, pkg, test := f[0], f[1], f[2]
		if a[stage] == nil {
			a[stage] = map[string]map[string]string{}
		}
		if a[stage][pkg] == nil {
			a[stage][pkg] = map[string]string{}
		}
		a[stage][pkg][test] = strings.Join(f[3:], " ")
	}
	return a, sc.Err()
}

// Reader turns events into a Report and writes a short human log of them
// to out: each package's result, slow tests, and the whole output of what
// failed or skipped.
type Reader struct {
	stage   string
	allowed Allowed
	out     io.Writer
	slow    time.Duration

	outputs  map[key][]string // output of a test (or package: Test "") until it ends
	ranTests map[string]bool  // package ran at least one test
	report   Report
}

type key struct{ pkg, test string }

// NewReader reports to out; tests slower than slow get a line of their own.
func NewReader(stage string, allowed Allowed, out io.Writer, slow time.Duration) *Reader {
	return &Reader{stage: stage, allowed: allowed, out: out, slow: slow,
		outputs: map[key][]string{}, ranTests: map[string]bool{}, report: Report{Stage: stage}}
}

// Line takes one line of go test -json's output; a line that is not an
// event (a build error printed as text) is passed through.
func (r *Reader) Line(line []byte) {
	var e Event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
		fmt.Fprintf(r.out, "%s\n", line)
		return
	}
	r.Event(e)
}

// Event takes one event.
func (r *Reader) Event(e Event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "build-fail":
		r.report.BuildFailed = append(r.report.BuildFailed, e.ImportPath)
	case "run":
		r.ranTests[e.Package] = true
	case "output":
		r.outputs[k] = append(r.outputs[k], e.Output)
		if e.Test == "" && strings.Contains(e.Output, "testing: warning: no tests to run") {
			r.report.NoTests = append(r.report.NoTests, e.Package)
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.endPackage(e)
		} else {
			r.endTest(e)
		}
	}
}

func (r *Reader) endTest(e Event) {
	k := key{e.Package, e.Test}
	res := Result{Package: e.Package, Test: e.Test, Action: e.Action, Elapsed: e.Elapsed}
	switch e.Action {
	case "fail":
		fmt.Fprintf(r.out, "--- FAIL: %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
		for _, o := range r.outputs[k] {
			fmt.Fprint(r.out, "    ", o)
		}
	case "skip":
		res.Reason = skipReason(r.outputs[k])
		if _, ok := r.allowed.Reason(r.stage, e.Package, e.Test); ok {
			r.report.Listed = append(r.report.Listed, res)
			fmt.Fprintf(r.out, "--- SKIP (listed): %s %s: %s\n", e.Package, e.Test, res.Reason)
		} else {
			r.report.Unlisted = append(r.report.Unlisted, res)
			fmt.Fprintf(r.out, "--- SKIP (NOT in test/skips.txt): %s %s: %s\n", e.Package, e.Test, res.Reason)
		}
	case "pass":
		if !strings.Contains(e.Test, "/") && time.Duration(e.Elapsed*float64(time.Second)) >= r.slow {
			fmt.Fprintf(r.out, "    %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
		}
	}
	delete(r.outputs, k)
	r.report.Tests = append(r.report.Tests, res)
}

func (r *Reader) endPackage(e Event) {
	k := key{e.Package, ""}
	word := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "?   "}[e.Action]
	if e.Action == "skip" {
		fmt.Fprintf(r.out, "%s %s [no test files]\n", word, e.Package)
	} else {
		fmt.Fprintf(r.out, "%s %s %.1fs\n", word, e.Package, e.Elapsed)
	}
	if e.Action == "fail" {
		for _, o := range r.outputs[k] {
			fmt.Fprint(r.out, "    ", o)
		}
	}
	delete(r.outputs, k)
	if e.Action != "skip" {
		r.report.Packages = append(r.report.Packages, Result{Package: e.Package, Action: e.Action, Elapsed: e.Elapsed})
	}
}

// Report is what was read so far.
func (r *Reader) Report() *Report {
	rep := r.report
	sort.Strings(rep.NoTests)
	return &rep
}

// skipReason is the message of t.Skip: the last output line before the
// "--- SKIP" line, without its file:line prefix.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		l := strings.TrimSpace(out[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, rest, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(rest)], ".go:") {
			return rest
		}
		return l
	}
	return "(no reason given)"
}

// Unran checks stages together: a test that a stage skipped by the list
// for that stage (not "*") must have passed in another stage, so a test
// that runs only in one mode is counted where it ran, never nowhere.
func Unran(allowed Allowed, reports []*Report) []string {
	passed := map[key]bool{}
	for _, rep := range reports {
		for _, t := range rep.Tests {
			if t.Action == "pass" {
				passed[key{t.Package, t.Test}] = true
			}
		}
	}
	var why []string
	for _, rep := range reports {
		for _, s := range rep.Listed {
			if _, everywhere := allowed["*"][s.Package][s.Test]; everywhere {
				continue
			}
			if !passed[key{s.Package, s.Test}] {
				why = append(why, fmt.Sprintf("%s %s: skipped in stage %s and passed in no other stage", s.Package, s.Test, rep.Stage))
			}
		}
	}
	sort.Strings(why)
	return why
}
