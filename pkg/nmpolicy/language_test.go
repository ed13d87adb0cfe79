package nmpolicy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// langState is the current state the language tests run against.
const langState = `
hostname:
  running: h1
  config: h1
flag: true
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 1500
  enabled: true
  ipv4:
    address:
    - ip: 10.0.0.1
      prefix-length: 24
    - ip: 10.0.0.2
      prefix-length: 24
- name: eth1
  type: ethernet
  state: down
  mtu: 9000
  enabled: false
- name: br0
  type: linux-bridge
  state: up
  mtu: 1500
  bridge:
    port:
    - name: eth0
      stp-priority: 32
    - name: eth1
      stp-priority: 16
routes:
  config:
  - destination: 0.0.0.0/0
    next-hop-interface: eth0
    metric: 100
  running:
  - destination: 0.0.0.0/0
    next-hop-interface: eth0
    metric: 100
  - destination: 10.1.0.0/16
    next-hop-interface: br0
    metric: 200
ovs-db:
  external_ids:
    k: v
`

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustDoc(t testing.TB, s string) any {
	t.Helper()
	d, err := DecodeDocument([]byte(s))
	if err != nil {
		t.Fatalf("decoding test document: %v", err)
	}
	return d
}

// TestCaptureExpressions evaluates captures against langState and compares
// the captured state of capture "x" (other captures are helpers).
func TestCaptureExpressions(t *testing.T) {
	tests := []struct {
		name    string
		capture map[string]string
		want    string
	}{
		{"empty expression copies the current state", map[string]string{"x": "  "}, langState},
		{"one-step path filter", map[string]string{"x": "routes"}, `
routes:
  config: [{destination: 0.0.0.0/0, next-hop-interface: eth0, metric: 100}]
  running:
  - {destination: 0.0.0.0/0, next-hop-interface: eth0, metric: 100}
  - {destination: 10.1.0.0/16, next-hop-interface: br0, metric: 200}`},
		{"path filter drops siblings", map[string]string{"x": "hostname.running"}, `hostname: {running: h1}`},
		{"path filter keeps lists whole", map[string]string{"x": "routes.config.destination"}, `
routes:
  config: [{destination: 0.0.0.0/0, next-hop-interface: eth0, metric: 100}]`},
		{"path filter with a missing key is empty", map[string]string{"x": "dns-resolver.running"}, `{}`},
		{"path filter on a scalar's child is empty", map[string]string{"x": "hostname.running.x"}, `{}`},
		{"path filter with underscore step", map[string]string{"x": "ovs-db.external_ids"}, `ovs-db: {external_ids: {k: v}}`},
		{"== with double-quoted string", map[string]string{"x": `interfaces.name == "eth1"`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with single-quoted string", map[string]string{"x": `interfaces.name=='eth1'`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with bare word", map[string]string{"x": `interfaces.state == down`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with integer compares string form", map[string]string{"x": `interfaces.mtu == 9000`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with quoted integer", map[string]string{"x": `interfaces.mtu == "9000"`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with boolean", map[string]string{"x": `interfaces.enabled == false`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"== with quoted boolean", map[string]string{"x": `interfaces.enabled == "false"`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"!= skips elements without the key", map[string]string{"x": `interfaces.enabled != true`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
		{"!= keeps order", map[string]string{"x": `interfaces.name != eth0`}, `
interfaces:
- {name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}
- {name: br0, type: linux-bridge, state: up, mtu: 1500, bridge: {port: [{name: eth0, stp-priority: 32}, {name: eth1, stp-priority: 16}]}}`},
		{"filter under routes.running drops config", map[string]string{"x": `routes.running.metric == 200`}, `
routes: {running: [{destination: 10.1.0.0/16, next-hop-interface: br0, metric: 200}]}`},
		{"filter through nested list keeps element whole", map[string]string{"x": `interfaces.ipv4.address.ip == "10.0.0.2"`}, `
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 1500
  enabled: true
  ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}`},
		{"filter with index step inside element", map[string]string{"x": `interfaces.bridge.port.1.stp-priority == 16`}, `
interfaces:
- {name: br0, type: linux-bridge, state: up, mtu: 1500, bridge: {port: [{name: eth0, stp-priority: 32}, {name: eth1, stp-priority: 16}]}}`},
		{"filter with index step on the first list", map[string]string{"x": `routes.running.1.metric == 200`}, `
routes: {running: [{destination: 10.1.0.0/16, next-hop-interface: br0, metric: 200}]}`},
		{"filter without a list keeps the holding map", map[string]string{"x": `hostname.running == h1`}, `hostname: {running: h1, config: h1}`},
		{"filter on a top-level scalar", map[string]string{"x": `flag == true`}, `flag: true`},
		{"replace with string on every element", map[string]string{"x": `interfaces.state := "up"`}, strings.ReplaceAll(langState, "state: down", "state: up")},
		{"replace returns the whole input", map[string]string{"x": `hostname.config := h2`}, strings.Replace(langState, "config: h1", "config: h2", 1)},
		{"replace creates missing maps", map[string]string{"y": `interfaces.name == eth1`, "x": `capture.y | interfaces.lldp.enabled := true`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false, lldp: {enabled: true}}]`},
		{"replace through nested lists", map[string]string{"y": `interfaces.name == br0`, "x": `capture.y | interfaces.bridge.port.stp-priority := 0`}, `
interfaces:
- {name: br0, type: linux-bridge, state: up, mtu: 1500, bridge: {port: [{name: eth0, stp-priority: 0}, {name: eth1, stp-priority: 0}]}}`},
		{"replace with null removes the key", map[string]string{"y": `interfaces.name == eth1`, "x": `capture.y | interfaces.mtu := NULL`}, `
interfaces: [{name: eth1, type: ethernet, state: down, enabled: false}]`},
		{"replace with integer keeps number", map[string]string{"y": `interfaces.name == eth1`, "x": `capture.y | interfaces.mtu := -1`}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: -1, enabled: false}]`},
		{"replace with a map from the current state", map[string]string{"y": `interfaces.name == eth1`, "x": `capture.y | interfaces.ipv4 := interfaces.0.ipv4`}, `
interfaces:
- {name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false, ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}}`},
		{"replace with a list from a capture", map[string]string{"r": `routes.running`, "y": `interfaces.name == eth1`, "x": `capture.y | interfaces.routes := capture.r.routes.running`}, `
interfaces:
- name: eth1
  type: ethernet
  state: down
  mtu: 9000
  enabled: false
  routes:
  - {destination: 0.0.0.0/0, next-hop-interface: eth0, metric: 100}
  - {destination: 10.1.0.0/16, next-hop-interface: br0, metric: 200}`},
		{"replace with empty string", map[string]string{"y": `interfaces.name == eth1`, "x": `capture.y | interfaces.type := ''`}, `
interfaces: [{name: eth1, type: "", state: down, mtu: 9000, enabled: false}]`},
		{"string with spaces and dots is a literal", map[string]string{"x": `hostname.config := "a b.c"`, "z": `capture.x | hostname.config == "a b.c"`}, strings.Replace(langState, "config: h1", "config: a b.c", 1)},
		{"== with capture operand", map[string]string{"gw": `routes.running.destination == "0.0.0.0/0"`, "x": `interfaces.name == capture.gw.routes.running.0.next-hop-interface`}, `
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 1500
  enabled: true
  ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}`},
		{"== with current-state operand", map[string]string{"x": `interfaces.name == routes.running.1.next-hop-interface`}, `
interfaces:
- {name: br0, type: linux-bridge, state: up, mtu: 1500, bridge: {port: [{name: eth0, stp-priority: 32}, {name: eth1, stp-priority: 16}]}}`},
		{"pipe of three stages", map[string]string{
			"a": `interfaces.type == ethernet`,
			"b": `capture.a | interfaces.mtu == 1500`,
			"x": `capture.b | interfaces.mtu := 1400`,
		}, `
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 1400
  enabled: true
  ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}`},
		{"capture prefix equals pipe", map[string]string{"a": `interfaces.type == ethernet`, "x": `capture.a.interfaces.state == up`}, `
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 1500
  enabled: true
  ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}`},
		{"capture.NAME alone copies", map[string]string{"a": `hostname.running`, "x": `capture.a`}, `hostname: {running: h1}`},
		{"capture.NAME.path alone filters the capture", map[string]string{"a": `routes.running.metric == 100`, "x": `capture.a.routes`}, `
routes: {running: [{destination: 0.0.0.0/0, next-hop-interface: eth0, metric: 100}]}`},
		{"path filter after a pipe", map[string]string{"a": `routes.running.metric == 200`, "x": `capture.a | routes.running`}, `
routes: {running: [{destination: 10.1.0.0/16, next-hop-interface: br0, metric: 200}]}`},
		{"references resolve regardless of name order", map[string]string{
			"a": `capture.z | interfaces.mtu == 1500`,
			"z": `capture.m | interfaces.state == up`,
			"m": `interfaces.type == linux-bridge`,
			"x": `capture.a | interfaces.name := capture.m.interfaces.0.type`,
		}, `
interfaces:
- {name: linux-bridge, type: linux-bridge, state: up, mtu: 1500, bridge: {port: [{name: eth0, stp-priority: 32}, {name: eth1, stp-priority: 16}]}}`},
		{"no-break space and folded newlines are whitespace", map[string]string{"x": "\u00a0interfaces.name\n==\t\"eth1\" \n"}, `
interfaces: [{name: eth1, type: ethernet, state: down, mtu: 9000, enabled: false}]`},
	}
	current := mustDoc(t, langState)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EvaluateCaptures(tc.capture, current, nil, testNow)
			if err != nil {
				t.Fatalf("EvaluateCaptures: %v", err)
			}
			want := mustDoc(t, tc.want)
			if diff := cmp.Diff(want, any(got["x"].State), cmpEmpty); diff != "" {
				t.Errorf("captured x (-want +got):\n%s", diff)
			}
			if got["x"].MetaInfo != (MetaInfo{Version: "0", Time: testNow}) {
				t.Errorf("metaInfo = %+v", got["x"].MetaInfo)
			}
		})
	}
}

// cmpEmpty treats an empty map like the empty document "{}" decodes to.
var cmpEmpty = cmp.FilterValues(func(a, b any) bool { return isEmptyDoc(a) && isEmptyDoc(b) }, cmp.Comparer(func(a, b any) bool { return true }))

func TestTemplates(t *testing.T) {
	captures := map[string]string{
		"eth0":  `interfaces.name == eth0`,
		"br":    `interfaces.name == br0`,
		"flag":  `flag`,
		"names": `hostname`,
	}
	tests := []struct {
		name    string
		desired string
		want    string
	}{
		{"whole-value number", `mtu: "{{ capture.eth0.interfaces.0.mtu }}"`, `mtu: 1500`},
		{"whole-value boolean", `enabled: "{{capture.eth0.interfaces.0.enabled}}"`, `enabled: true`},
		{"whole-value string", `name: "{{ capture.eth0.interfaces.0.name }}"`, `name: eth0`},
		{"whole-value map", `ipv4: "{{ capture.eth0.interfaces.0.ipv4 }}"`, `ipv4: {address: [{ip: 10.0.0.1, prefix-length: 24}, {ip: 10.0.0.2, prefix-length: 24}]}`},
		{"whole-value list", `ports: "{{ capture.br.interfaces.0.bridge.port }}"`, `ports: [{name: eth0, stp-priority: 32}, {name: eth1, stp-priority: 16}]`},
		{"whole-value with surrounding spaces", `v: "  {{ capture.flag.flag }} "`, `v: true`},
		{"embedded string", `d: "port {{ capture.br.interfaces.0.bridge.port.1.name }}!"`, `d: "port eth1!"`},
		{"embedded number keeps text verbatim", `d: "mtu  = {{ capture.eth0.interfaces.0.mtu }} bytes"`, `d: "mtu  = 1500 bytes"`},
		{"embedded boolean", `d: "on={{ capture.flag.flag }}"`, `d: "on=true"`},
		{"lone braces are literal", `d: "a{b}c { } }"`, `d: "a{b}c { } }"`},
		{"keys are untouched", `"{{ capture.flag.flag }}": x`, `"{{ capture.flag.flag }}": x`},
		{"templates inside lists", `l: ["{{ capture.names.hostname.config }}", "x-{{ capture.names.hostname.running }}", 3]`, `l: [h1, x-h1, 3]`},
		{"non-string values untouched", `a: 1
b: [true, null]`, `a: 1
b: [true, null]`},
	}
	current := mustDoc(t, langState)
	captured, err := EvaluateCaptures(captures, current, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderTemplates(mustDoc(t, tc.desired), captured)
			if err != nil {
				t.Fatalf("RenderTemplates: %v", err)
			}
			if diff := cmp.Diff(mustDoc(t, tc.want), got); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrors checks the kind, location and caret of errors. caret is the
// expected last line of the message (the dots and caret).
func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		capture  map[string]string
		desired  string
		kind     ErrorKind
		capName  string // capture reported
		location string // template location reported
		pos      int
		msg      string // substring of the description
	}{
		{"lone =", map[string]string{"x": `interfaces.name = eth0`}, "", KindLexical, "x", "", 16, `"=" must be part of`},
		{"lone !", map[string]string{"x": `interfaces.name ! eth0`}, "", KindLexical, "x", "", 16, `"!" must be part of`},
		{"lone :", map[string]string{"x": `interfaces.name : eth0`}, "", KindLexical, "x", "", 16, `":" must be part of`},
		{"unterminated string", map[string]string{"x": `interfaces.name == "eth0`}, "", KindLexical, "x", "", 19, "unterminated string"},
		{"plus is not an operator", map[string]string{"x": `interfaces + routes`}, "", KindLexical, "x", "", 11, `unexpected character "+"`},
		{"space inside a path", map[string]string{"x": `interfaces . name == eth0`}, "", KindLexical, "x", "", 11, "empty path step"},
		{"trailing dot", map[string]string{"x": `interfaces. == eth0`}, "", KindLexical, "x", "", 11, "empty path step"},
		{"unquoted address", map[string]string{"x": `routes.running.destination == 0.0.0.0/0`}, "", KindLexical, "x", "", 37, `character "/"`},
		{"integer overflow", map[string]string{"x": `interfaces.mtu == 99999999999999999999`}, "", KindLexical, "x", "", 18, "out of range"},
		{"two pipes", map[string]string{"a": "interfaces", "x": `capture.a | capture.a | interfaces`}, "", KindSyntax, "x", "", 22, "only one pipe"},
		{"pipe input with extra steps", map[string]string{"a": "interfaces", "x": `capture.a.interfaces | interfaces.name == x`}, "", KindSyntax, "x", "", 0, "exactly capture.NAME"},
		{"pipe input not a capture", map[string]string{"x": `interfaces | interfaces.name == x`}, "", KindSyntax, "x", "", 0, "exactly capture.NAME"},
		{"missing expression after pipe", map[string]string{"a": "interfaces", "x": `capture.a |`}, "", KindSyntax, "x", "", 11, "missing expression"},
		{"missing pipe input", map[string]string{"x": `| interfaces`}, "", KindSyntax, "x", "", 0, "missing pipe input"},
		{"pipe with capture-prefixed path", map[string]string{"a": "interfaces", "x": `capture.a | capture.a.interfaces.name == x`}, "", KindSyntax, "x", "", 12, "cannot start with capture.NAME"},
		{"missing operand", map[string]string{"x": `interfaces.name ==`}, "", KindSyntax, "x", "", 18, "missing right-hand operand"},
		{"two operators", map[string]string{"x": `interfaces.name == a == b`}, "", KindSyntax, "x", "", 21, "unexpected"},
		{"string on the left", map[string]string{"x": `"eth0" == interfaces.name`}, "", KindSyntax, "x", "", 0, "left-hand side must be a path"},
		{"operator first", map[string]string{"x": `== eth0`}, "", KindSyntax, "x", "", 0, "missing path"},
		{"free text", map[string]string{"x": `keep everything`}, "", KindSyntax, "x", "", 5, `expected "==", "!=" or ":="`},
		{"null with ==", map[string]string{"x": `interfaces.mtu == null`}, "", KindSyntax, "x", "", 18, "null is only allowed"},
		{"index in replace path", map[string]string{"x": `interfaces.0.mtu := 1`}, "", KindSyntax, "x", "", 11, "index steps are not allowed"},
		{"capture operand without path", map[string]string{"a": "interfaces", "x": `interfaces.name == capture.a`}, "", KindSyntax, "x", "", 28, "needs a path"},
		{"capture prefix without path before op", map[string]string{"a": "interfaces", "x": `capture.a == x`}, "", KindSyntax, "x", "", 9, "missing path after capture.a"},
		{"all-digit capture name", map[string]string{"x": `capture.0 | interfaces`}, "", KindSyntax, "x", "", 8, "must not be all digits"},
		{"invalid step character", map[string]string{"x": `interfäces`}, "", KindLexical, "x", "", 6, `character "ä"`},
		{"unknown capture in pipe", map[string]string{"x": `capture.nope | interfaces`}, "", KindUnknownCapture, "x", "", 8, `unknown capture "nope" (the policy defines x)`},
		{"unknown capture operand", map[string]string{"x": `interfaces.name == capture.nope.a`}, "", KindUnknownCapture, "x", "", 27, `unknown capture "nope"`},
		{"self reference", map[string]string{"x": `capture.x | interfaces`}, "", KindCycle, "x", "", 8, "x → x"},
		{"three-capture cycle", map[string]string{"a": `capture.c | interfaces`, "b": `capture.a.interfaces`, "c": `interfaces.name == capture.b.interfaces.0.name`}, "", KindCycle, "b", "", 8, "a → c → b → a"},
		{"no match", map[string]string{"x": `interfaces.name == eth9`}, "", KindNoMatch, "x", "", 0, "selected nothing"},
		{"no match with != on missing keys", map[string]string{"x": `interfaces.lldp.enabled != true`}, "", KindNoMatch, "x", "", 0, "selected nothing"},
		{"index step on a map in a filter", map[string]string{"x": `routes.0.metric == 1`}, "", KindPath, "x", "", 7, "index 0 used on a map"},
		{"operand lookup missing key", map[string]string{"x": `interfaces.name == routes.running.0.nexthop`}, "", KindPath, "x", "", 36, `key "nexthop" not found`},
		{"operand lookup key on list", map[string]string{"x": `interfaces.name == interfaces.name`}, "", KindPath, "x", "", 30, "used on a list"},
		{"non-scalar operand", map[string]string{"x": `interfaces.name == interfaces.0.ipv4`}, "", KindType, "x", "", 19, "must be a string, number or boolean"},
		{"replace through a scalar", map[string]string{"x": `hostname.running.x := 1`}, "", KindPath, "x", "", 17, `cannot apply step "x" to "h1"`},
		{"replace on a list of scalars", map[string]string{"y": `interfaces.name == br0`, "x": `capture.y | interfaces.bridge.port.name.x := 1`}, "", KindPath, "x", "", 40, `cannot apply step "x" to "eth0"`},
		{"template: two references", nil, `d: "{{ capture.a.b }} {{ capture.a.c }}"`, KindTemplate, "", "d", 18, "only one reference"},
		{"template: missing close", nil, `d: "x {{ capture.a.b"`, KindTemplate, "", "d", 2, `without a closing`},
		{"template: close first", nil, `d: "}} {{ capture.a.b }}"`, KindTemplate, "", "d", 0, `without an opening`},
		{"template: empty", nil, `l: [ok, "{{  }}"]`, KindTemplate, "", "l[1]", 0, "empty reference"},
		{"template: not a capture", nil, `d: "{{ interfaces.0.name }}"`, KindTemplate, "", "d", 3, "only refer to captured data"},
		{"template: whole capture", nil, `a: {b: "{{ capture.eth0 }}"}`, KindTemplate, "", "a.b", 15, "whole capture"},
		{"template: two paths", nil, `d: "{{ capture.eth0.interfaces capture.eth0.x }}"`, KindTemplate, "", "d", 27, "single path"},
		{"template: lexical error inside", nil, `d: "{{ capture.eth0.interfaces.0.name = x }}"`, KindTemplate, "", "d", 34, `"=" must be part of`},
		{"template: unknown capture", nil, `d: "{{ capture.eht0.interfaces.0.name }}"`, KindUnknownCapture, "", "d", 11, `unknown capture "eht0" (the policy defines e, eth0, n)`},
		{"template: missing path", nil, `d: "{{ capture.eth0.interfaces.0.mtux }}"`, KindPath, "", "d", 29, `key "mtux" not found`},
		{"template: index out of range", nil, `i: [{d: "{{ capture.eth0.interfaces.3.name }}"}]`, KindPath, "", "i[0].d", 27, "index 3 out of range (list has 1 element)"},
		{"template: map in text", nil, `d: "x{{ capture.eth0.interfaces.0 }}"`, KindType, "", "d", 4, "is map with keys"},
		{"template: null in text", nil, `d: "x{{ capture.n.nullval }}"`, KindType, "", "d", 4, "null"},
	}
	current := mustDoc(t, langState+"\nnullval: null\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			capture := tc.capture
			desired := tc.desired
			if capture == nil {
				capture = map[string]string{"eth0": `capture.e | interfaces.none := null`, "e": `interfaces.name == eth0`, "n": `nullval`}
			}
			if desired == "" {
				desired = "x: 1"
			}
			policy := Policy{Capture: capture, DesiredState: mustDoc(t, desired)}
			_, err := GenerateState(policy, current, nil, testNow)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("got error %v, want an *Error", err)
			}
			if perr.Kind != tc.kind || perr.Capture != tc.capName || perr.Location != tc.location || perr.Pos != tc.pos || !strings.Contains(perr.Msg, tc.msg) {
				t.Errorf("got kind=%q capture=%q location=%q pos=%d msg=%q\nwant kind=%q capture=%q location=%q pos=%d msg~%q\n%v",
					perr.Kind, perr.Capture, perr.Location, perr.Pos, perr.Msg, tc.kind, tc.capName, tc.location, tc.pos, tc.msg, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if want := "| " + strings.Repeat(".", tc.pos) + "^"; lines[len(lines)-1] != want {
				t.Errorf("caret line = %q, want %q", lines[len(lines)-1], want)
			}
		})
	}
}
