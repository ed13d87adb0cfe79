package testreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReader(t *testing.T) {
	const pkg = "example.com/p"
	allowed := Allowed{"unit": {pkg: {"TestListed": "needs a NIC this machine lacks"}}}
	tests := []struct {
		name   string
		events []Event
		want   []string // Failed()
		counts [3]int
	}{
		{
			name: "all passed",
			events: []Event{
				{Action: "run", Package: pkg, Test: "TestA"},
				{Action: "pass", Package: pkg, Test: "TestA", Elapsed: 0.1},
				{Action: "pass", Package: pkg, Elapsed: 0.2},
			},
			counts: [3]int{1, 0, 0},
		},
		{
			name: "failed test",
			events: []Event{
				{Action: "run", Package: pkg, Test: "TestA"},
				{Action: "output", Package: pkg, Test: "TestA", Output: "    a_test.go:3: boom\n"},
				{Action: "fail", Package: pkg, Test: "TestA"},
				{Action: "fail", Package: pkg},
			},
			want:   []string{pkg + " TestA failed", pkg + " failed"},
			counts: [3]int{0, 1, 0},
		},
		{
			name: "unlisted skip fails",
			events: []Event{
				{Action: "run", Package: pkg, Test: "TestB"},
				{Action: "output", Package: pkg, Test: "TestB", Output: "    b_test.go:9: no Open vSwitch\n"},
				{Action: "output", Package: pkg, Test: "TestB", Output: "--- SKIP: TestB (0.00s)\n"},
				{Action: "skip", Package: pkg, Test: "TestB"},
				{Action: "pass", Package: pkg},
			},
			want:   []string{pkg + " TestB skipped, and test/skips.txt does not name it: no Open vSwitch"},
			counts: [3]int{0, 0, 1},
		},
		{
			name: "listed skip passes",
			events: []Event{
				{Action: "run", Package: pkg, Test: "TestListed"},
				{Action: "skip", Package: pkg, Test: "TestListed"},
				{Action: "pass", Package: pkg},
			},
			counts: [3]int{0, 0, 1},
		},
		{
			name: "a -run pattern that matched nothing",
			events: []Event{
				{Action: "output", Package: pkg, Output: "testing: warning: no tests to run\n"},
				{Action: "pass", Package: pkg},
			},
			want: []string{pkg + " ran no test: a -run pattern matched nothing there"},
		},
		{
			name: "build failure",
			events: []Event{
				{Action: "build-output", ImportPath: pkg + " [" + pkg + ".test]", Output: "p.go:1: syntax error\n"},
				{Action: "build-fail", ImportPath: pkg + " [" + pkg + ".test]"},
				{Action: "fail", Package: pkg},
			},
			want: []string{pkg + " failed", pkg + " [" + pkg + ".test]: test binary did not build"},
		},
		{
			name: "no test files is fine",
			events: []Event{
				{Action: "skip", Package: pkg},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := NewReader("unit", allowed, &out, 0)
			for _, e := range tt.events {
				r.Event(e)
			}
			rep := r.Report()
			if diff := cmp.Diff(tt.want, rep.Failed()); diff != "" {
				t.Errorf("Failed() (-want +got):\n%s\noutput:\n%s", diff, out.String())
			}
			p, f, s := rep.Counts()
			if got := [3]int{p, f, s}; got != tt.counts {
				t.Errorf("Counts() = %v, want %v", got, tt.counts)
			}
		})
	}
}

func TestParseAllowed(t *testing.T) {
	got, err := ParseAllowed(strings.NewReader("# c\n\n* example.com/p TestX needs hardware\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Allowed{"*": {"example.com/p": {"TestX": "needs hardware"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseAllowed(strings.NewReader("unit example.com/p TestX\n")); err == nil {
		t.Error("an entry without a reason was accepted")
	}
}

func TestSkipReason(t *testing.T) {
	got := skipReason([]string{"=== RUN   TestB\n", "    b_test.go:9: no Open vSwitch: ovs-vswitchd not found\n", "--- SKIP: TestB (0.00s)\n"})
	if want := "no Open vSwitch: ovs-vswitchd not found"; got != want {
		t.Errorf("skipReason = %q, want %q", got, want)
	}
}

func TestUnran(t *testing.T) {
	const pkg = "example.com/p"
	allowed := Allowed{
		"container": {pkg: {"TestKubeletOnly": "kubelet mode only"}},
		"*":         {pkg: {"TestHardware": "needs hardware"}},
	}
	skipped := func(stage string, tests ...string) *Report {
		r := &Report{Stage: stage}
		for _, n := range tests {
			r.Listed = append(r.Listed, Result{Package: pkg, Test: n, Action: "skip"})
		}
		return r
	}
	passedIn := func(stage, test string) *Report {
		return &Report{Stage: stage, Tests: []Result{{Package: pkg, Test: test, Action: "pass"}}}
	}
	tests := []struct {
		name    string
		reports []*Report
		want    []string
	}{
		{"ran in its own stage", []*Report{skipped("container", "TestKubeletOnly"), passedIn("kubelet", "TestKubeletOnly")}, nil},
		{"ran nowhere", []*Report{skipped("container", "TestKubeletOnly")},
			[]string{pkg + " TestKubeletOnly: skipped in stage container and passed in no other stage"}},
		{"allowed everywhere", []*Report{skipped("container", "TestHardware")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Unran(allowed, tt.reports)); diff != "" {
				t.Errorf("Unran (-want +got):\n%s", diff)
			}
		})
	}
}
