package handler

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
	"github.com/knmstate/knmstate/pkg/nnsencoding"
)

func nnsObj(uid, rv, state, handlerVersion, hostNM string) *nmstatev1beta1.NodeNetworkState {
	o := &nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: types.UID(uid), ResourceVersion: rv}}
	if state != "" {
		o.Status.CurrentState = shared.State{Raw: []byte(state)}
	}
	o.Status.HandlerNmstateVersion = handlerVersion
	o.Status.HostNetworkManagerVersion = hostNM
	return o
}

func mustView(t *testing.T, o *nmstatev1beta1.NodeNetworkState) *view {
	t.Helper()
	v, err := newView(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b": 1, "a": {"d": [3, 2], "c": "x"}}`, `{"a":{"c":"x","d":[3,2]},"b":1}`},
		// Numbers are kept as written: 64-bit values survive.
		{`{"n": 18446744073709551615, "f": 1.50}`, `{"f":1.50,"n":18446744073709551615}`},
		{``, ``},
	}
	for _, tc := range tests {
		got, err := canonicalJSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("canonicalJSON(%s): %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("canonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := canonicalJSON([]byte(`{"a":`)); err == nil {
		t.Error("canonicalJSON of broken JSON: no error")
	}
}

func TestNewReportIsCanonical(t *testing.T) {
	// What the handler writes equals what the API gives back (sorted
	// keys), so an unchanged state compares equal after a round trip.
	r, err := newReport(st.State(st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.1/24")))), "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	again, err := canonicalJSON(r.state)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(again), string(r.state)); diff != "" {
		t.Errorf("report state is not canonical (-canonical +report):\n%s", diff)
	}
	if r.handlerVersion != "1.2.3" || r.hostNMVersion != NoNetworkManager {
		t.Errorf("versions = %q, %q", r.handlerVersion, r.hostNMVersion)
	}
}

func TestDecide(t *testing.T) {
	rep := report{state: []byte(`{"interfaces":[]}`), handlerVersion: "v1", hostNMVersion: NoNetworkManager}
	tests := []struct {
		name  string
		known *nmstatev1beta1.NodeNetworkState
		want  action
	}{
		{"missing object is created", nil, actCreate},
		{"new object without status gets one", nnsObj("u", "1", "", "", ""), actStatus},
		{"same content, key order as the API returns it", nnsObj("u", "2", `{ "interfaces" : [ ] }`, "v1", NoNetworkManager), actNone},
		{"changed content", nnsObj("u", "2", `{"interfaces":[{"name":"eth0"}]}`, "v1", NoNetworkManager), actStatus},
		{"handler version changed", nnsObj("u", "2", `{"interfaces":[]}`, "v0", NoNetworkManager), actStatus},
		{"host version changed", nnsObj("u", "2", `{"interfaces":[]}`, "v1", ""), actStatus},
		// A full report on an object still marked compact: the state is
		// written first, the mark removed after.
		{"marked compact, other content", withEncoding(nnsObj("u", "2", `{"interfaces":[{"name":"eth0"}]}`, "v1", NoNetworkManager), nnsencoding.CompactV1), actStatus},
		{"marked compact, same content", withEncoding(nnsObj("u", "2", `{"interfaces":[]}`, "v1", NoNetworkManager), nnsencoding.CompactV1), actEncoding},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v *view
			if tc.known != nil {
				v = mustView(t, tc.known)
			}
			if got := decide(v, rep); got != tc.want {
				t.Errorf("decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func withEncoding(o *nmstatev1beta1.NodeNetworkState, enc string) *nmstatev1beta1.NodeNetworkState {
	o.Annotations = map[string]string{nnsencoding.Annotation: enc}
	return o
}

// TestDecideCompact: a compact report marks the object before its state
// is written, so no reader takes it for the full state.
func TestDecideCompact(t *testing.T) {
	rep := report{state: []byte(`{"interfaces":[]}`), handlerVersion: "v1", hostNMVersion: NoNetworkManager, encoding: nnsencoding.CompactV1}
	for _, tc := range []struct {
		name  string
		known *nmstatev1beta1.NodeNetworkState
		want  action
	}{
		{"unmarked, other content: mark first", nnsObj("u", "2", `{"interfaces":[{"name":"eth0"}]}`, "v1", NoNetworkManager), actEncoding},
		{"unmarked, same content: mark", nnsObj("u", "2", `{"interfaces":[]}`, "v1", NoNetworkManager), actEncoding},
		{"marked, other content", withEncoding(nnsObj("u", "2", `{"interfaces":[{"name":"eth0"}]}`, "v1", NoNetworkManager), nnsencoding.CompactV1), actStatus},
		{"marked, same content", withEncoding(nnsObj("u", "2", `{"interfaces":[]}`, "v1", NoNetworkManager), nnsencoding.CompactV1), actNone},
		{"marked with another encoding", withEncoding(nnsObj("u", "2", `{"interfaces":[]}`, "v1", NoNetworkManager), "compact-v9"), actEncoding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(mustView(t, tc.known), rep); got != tc.want {
				t.Errorf("decide = %v, want %v", got, tc.want)
			}
		})
	}
}

// routesState is a node with n static routes (each reported as config
// and as running, as Show does).
func routesState(n int) *nmstate.State {
	var routes []nmstate.Route
	for i := range n {
		routes = append(routes, st.Route(fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256), "eth1", "192.0.2.2"))
	}
	s := st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24"))), st.Routes(routes...))
	s.Routes.Running = slices.Clone(s.Routes.Config)
	return s
}

// TestReportCompactsOnlyOverBudget: the full state while it fits, the
// compact one (which expands to the full one) when it does not.
func TestReportCompactsOnlyOverBudget(t *testing.T) {
	for _, tc := range []struct {
		routes  int
		compact bool
	}{{100, false}, {6000, true}} {
		t.Run(fmt.Sprint(tc.routes), func(t *testing.T) {
			s := routesState(tc.routes)
			r, err := newReport(s, "v1")
			if err != nil {
				t.Fatal(err)
			}
			raw, err := nmstate.EncodeJSON(s)
			if err != nil {
				t.Fatal(err)
			}
			full, err := canonicalJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.compact {
				if r.encoding != "" || !bytes.Equal(r.state, full) {
					t.Fatalf("encoding %q, state %d bytes, want the full state (%d bytes)", r.encoding, len(r.state), len(full))
				}
				return
			}
			if len(full) <= nnsencoding.Budget {
				t.Fatalf("full state %d bytes fits the budget %d: the case tests nothing", len(full), nnsencoding.Budget)
			}
			if r.encoding != nnsencoding.CompactV1 || len(r.state) > nnsencoding.Budget {
				t.Fatalf("encoding %q, state %d bytes, want compact-v1 within %d", r.encoding, len(r.state), nnsencoding.Budget)
			}
			expanded, err := nnsencoding.ExpandJSON(r.state)
			if err != nil {
				t.Fatal(err)
			}
			// The same as compacting the full state's JSON.
			viaJSON, err := nnsencoding.CompactJSON(full)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.state, viaJSON) {
				t.Errorf("compact state (%d bytes) differs from nnsencoding.CompactJSON of the full one (%d bytes)", len(r.state), len(viaJSON))
			}
			// Running routes equal config ones here, in the same order:
			// the expansion gives the full state back byte for byte.
			if !bytes.Equal(expanded, full) {
				t.Errorf("expanded compact state (%d bytes) differs from the full one (%d bytes)", len(expanded), len(full))
			}
		})
	}
}

func TestNextStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	rep := report{state: []byte(`{"interfaces":[]}`), handlerVersion: "v2", hostNMVersion: NoNetworkManager}
	cond := shared.ConditionList{{Type: "Available", Status: "True"}}
	tests := []struct {
		name     string
		old      shared.NodeNetworkStateStatus
		oldState string
		want     shared.NodeNetworkStateStatus
	}{
		{
			name: "first write sets state, time and versions",
			want: shared.NodeNetworkStateStatus{CurrentState: shared.State{Raw: rep.state}, LastSuccessfulUpdateTime: metav1.NewTime(t1), HandlerNmstateVersion: "v2", HostNetworkManagerVersion: NoNetworkManager},
		},
		{
			name:     "changed state moves the time, keeps conditions",
			old:      shared.NodeNetworkStateStatus{CurrentState: shared.State{Raw: []byte(`{"a":1}`)}, LastSuccessfulUpdateTime: metav1.NewTime(t0), HandlerNmstateVersion: "v2", HostNetworkManagerVersion: NoNetworkManager, Conditions: cond},
			oldState: `{"a":1}`,
			want:     shared.NodeNetworkStateStatus{CurrentState: shared.State{Raw: rep.state}, LastSuccessfulUpdateTime: metav1.NewTime(t1), HandlerNmstateVersion: "v2", HostNetworkManagerVersion: NoNetworkManager, Conditions: cond},
		},
		{
			name:     "version-only change keeps the time",
			old:      shared.NodeNetworkStateStatus{CurrentState: shared.State{Raw: rep.state}, LastSuccessfulUpdateTime: metav1.NewTime(t0), HandlerNmstateVersion: "v1"},
			oldState: string(rep.state),
			want:     shared.NodeNetworkStateStatus{CurrentState: shared.State{Raw: rep.state}, LastSuccessfulUpdateTime: metav1.NewTime(t0), HandlerNmstateVersion: "v2", HostNetworkManagerVersion: NoNetworkManager},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextStatus(tc.old, []byte(tc.oldState), rep, t1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nextStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewer(t *testing.T) {
	tests := []struct {
		name        string
		known, seen *nmstatev1beta1.NodeNetworkState
		want        bool
	}{
		{"nothing known", nil, nnsObj("u", "5", "", "", ""), true},
		{"own write echoed back", nnsObj("u", "5", "", "", ""), nnsObj("u", "5", "", "", ""), false},
		{"older event after own write", nnsObj("u", "5", "", "", ""), nnsObj("u", "4", "", "", ""), false},
		{"later change by someone else", nnsObj("u", "5", "", "", ""), nnsObj("u", "6", "", "", ""), true},
		{"numeric, not text, order", nnsObj("u", "9", "", "", ""), nnsObj("u", "10", "", "", ""), true},
		{"recreated object", nnsObj("u", "5", "", "", ""), nnsObj("w", "3", "", "", ""), true},
		{"opaque versions that differ", nnsObj("u", "a", "", "", ""), nnsObj("u", "b", "", "", ""), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := newer(tc.known, tc.seen); got != tc.want {
				t.Errorf("newer = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReportMemo(t *testing.T) {
	var m reportMemo
	a := st.State(st.Interfaces(st.Ethernet("eth0")))
	b := st.State(st.Interfaces(st.Ethernet("eth1")))
	steps := []struct {
		st      string
		version string
	}{{"a", "v1"}, {"a", "v1"}, {"b", "v1"}, {"a", "v1"}, {"a", "v2"}}
	for i, s := range steps {
		in := a
		if s.st == "b" {
			in = b
		}
		got, err := m.report(in, s.version)
		if err != nil {
			t.Fatal(err)
		}
		want, err := newReport(in, s.version)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.state) != string(want.state) || got.handlerVersion != want.handlerVersion || got.hostNMVersion != want.hostNMVersion {
			t.Errorf("step %d: memo report %+v, want %+v", i, got, want)
		}
	}
}
