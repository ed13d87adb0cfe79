package nmpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// CheckCaptures finds, without a current state, exactly the capture errors
// evaluation reports for reasons of the expressions alone (syntax, unknown
// captures, cycles), and nothing for the cases that fail only on a node.
func TestCheckCapturesAgreesWithEvaluation(t *testing.T) {
	static := map[ErrorKind]bool{KindLexical: true, KindSyntax: true, KindUnknownCapture: true, KindCycle: true, KindInput: true}
	dirs, err := filepath.Glob("testdata/*/current.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			policy := readPolicy(t, dir)
			var want string
			if b, err := os.ReadFile(filepath.Join(dir, "error.txt")); err == nil && strings.HasPrefix(string(b), "capture ") {
				want = strings.TrimSuffix(string(b), "\n")
			}
			_, evalErr := EvaluateCaptures(policy.Capture, readDoc(t, filepath.Join(dir, "current.yaml")), nil, goldenNow)
			if e, ok := evalErr.(*Error); ok && !static[e.Kind] {
				want = "" // fails on this node's state only
			}
			var got string
			if errs := CheckCaptures(policy.Capture); len(errs) > 0 {
				got = errs[0].Error()
			}
			if got != want {
				t.Errorf("CheckCaptures = %q, want %q", got, want)
			}
		})
	}
}

func TestCheckCapturesReportsEveryCapture(t *testing.T) {
	errs := CheckCaptures(map[string]string{
		"a":  `interfaces.name = "eth1"`,
		"b":  `capture.zz | interfaces`,
		"ok": `interfaces.type == "ethernet"`,
		"7":  `interfaces`,
	})
	var got []string
	for _, e := range errs {
		got = append(got, string(e.Kind)+" "+e.Capture)
	}
	want := []string{"invalid input 7", "lexical error a", "unknown capture b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestReferences(t *testing.T) {
	doc := map[string]any{
		"interfaces": []any{
			map[string]any{
				"name":        "{{ capture.nic.interfaces.0.name }}.10",
				"mtu":         "{{capture.nic.interfaces.0.mtu}}",
				"description": "plain {text}",
				"vlan":        map[string]any{"base-iface": "{{ capture.nic.interfaces.0.name }}", "id": int64(10)},
			},
			map[string]any{"name": "{{ capture.nic }}"},
			map[string]any{"name": "{{ a.b.c }} and {{ d }}"},
		},
	}
	refs, errs := References(doc)
	want := []Reference{
		{Location: "interfaces[0].mtu", Template: "{{capture.nic.interfaces.0.mtu}}", Capture: "nic", CapturePos: 10},
		{Location: "interfaces[0].name", Template: "{{ capture.nic.interfaces.0.name }}.10", Capture: "nic", CapturePos: 11, Embedded: true},
		{Location: "interfaces[0].vlan.base-iface", Template: "{{ capture.nic.interfaces.0.name }}", Capture: "nic", CapturePos: 11},
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Location+": "+e.Msg)
	}
	wantErrs := []string{
		"interfaces[1].name: a reference needs a path after capture.NAME (a whole capture cannot be referenced)",
		"interfaces[2].name: only one reference per string is allowed",
	}
	if diff := cmp.Diff(wantErrs, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
