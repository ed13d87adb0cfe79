package nmpolicy

import (
	"errors"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"",
	"interfaces",
	"routes.running",
	`interfaces.name == "eth0"`,
	`interfaces.name=='eth1'`,
	`interfaces.mtu != 1500`,
	`interfaces.enabled == true`,
	`interfaces.lldp.enabled := true`,
	`interfaces.mtu := null`,
	`interfaces.ipv4.address.1.ip == "10.0.0.2"`,
	`capture.h | interfaces.state == up`,
	`capture.h.interfaces.name != eth0`,
	`capture.h`,
	`interfaces.name == capture.h.interfaces.0.name`,
	`interfaces.name == routes.running.0.next-hop-interface`,
	`interfaces.ipv4 := interfaces.0.ipv4`,
	`interfaces.name = "x"`,
	`a | b | c`,
	`"unterminated`,
	`interfaces . name`,
	"\u00a0interfaces\n==\tx",
	`routes.running.destination == 0.0.0.0/0`,
	`interfaces.mtu == 99999999999999999999`,
	`capture.x | interfaces`,
	`{{ capture.h.interfaces.0.name }}`,
}

// FuzzExpression evaluates arbitrary expressions as capture "x" next to a
// valid helper capture. It must never panic, and every error must be an
// *Error whose position lies inside (or just after) its expression.
func FuzzExpression(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	current := mustDoc(f, langState)
	f.Fuzz(func(t *testing.T, expr string) {
		if !utf8.ValidString(expr) {
			return
		}
		capture := map[string]string{"h": "interfaces.type == ethernet", "x": expr}
		got, err := EvaluateCaptures(capture, current, nil, testNow)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if got["x"].State == nil {
			t.Fatalf("capture x has a nil state")
		}
	})
}

// FuzzTemplate renders arbitrary desired-state strings.
func FuzzTemplate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
		f.Add("text {{ " + s + " }} text")
	}
	f.Add("{{}}")
	f.Add("}}{{")
	f.Add("{{{ capture.h.interfaces.0.name }}}")
	current := mustDoc(f, langState)
	captured, err := EvaluateCaptures(map[string]string{"h": "interfaces.type == ethernet"}, current, nil, testNow)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		got, err := RenderTemplates(map[string]any{"d": s}, captured)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if _, ok := got.(map[string]any)["d"]; !ok {
			t.Fatalf("rendered document lost key d: %v", got)
		}
	})
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	n := utf8.RuneCountInString(perr.Expression)
	if perr.Pos < -1 || perr.Pos > n || (perr.Pos >= 0 && perr.Expression == "" && perr.Kind != KindSyntax) {
		t.Fatalf("position %d outside expression %q (%d characters): %v", perr.Pos, perr.Expression, n, err)
	}
	_ = err.Error()
}
