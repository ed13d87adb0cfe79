package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nnsencoding"
)

// NoNetworkManager is what a NodeNetworkState reports as
// hostNetworkManagerVersion: knmstate configures the kernel directly and
// the host runs no NetworkManager. A fixed marker rather than an empty
// field, because upstream's users and tests expect the field to be
// non-empty, and rather than a made-up version, because a version string
// would claim a NetworkManager that is not there; "none" cannot be
// mistaken for one by a version parser.
const NoNetworkManager = "none"

// report is one reported state, ready to compare and write.
type report struct {
	// state is the filtered state as canonical JSON (see canonicalJSON).
	state []byte
	// handlerVersion and hostNMVersion fill the status version fields.
	handlerVersion string
	hostNMVersion  string
	// encoding is state's encoding, the value of the object's
	// nnsencoding.Annotation: "" (the full state) or compact-v1, used
	// only when the full state would not fit nnsencoding.Budget.
	encoding string
}

// newReport encodes a filtered state.
func newReport(st *nmstate.State, handlerVersion string) (report, error) {
	var m reportMemo
	return m.report(st, handlerVersion)
}

// withNM is the report of a node whose backend is NetworkManager: its
// version fills hostNetworkManagerVersion ("none" = kernel backend).
func (r report) withNM(version string) report {
	if version != "" {
		r.hostNMVersion = version
	}
	return r
}

// reportMemo remembers the last encoding and its report: the common case
// (an event or resync that changed nothing) then costs one encoding and a
// byte comparison, not the compact encoding as well on a large node.
type reportMemo struct {
	raw []byte
	rep report
}

func (m *reportMemo) report(st *nmstate.State, handlerVersion string) (report, error) {
	// Canonical from the start: the API server returns currentState with
	// its keys sorted, and the report is compared with what it returns.
	raw, err := nmstate.AppendCanonicalJSON(nil, st)
	if err != nil {
		return report{}, fmt.Errorf("encoding state: %w", err)
	}
	if m.raw != nil && bytes.Equal(raw, m.raw) && m.rep.handlerVersion == handlerVersion {
		return m.rep, nil
	}
	rep := report{state: raw, handlerVersion: handlerVersion, hostNMVersion: NoNetworkManager}
	if len(raw) > nnsencoding.Budget {
		// Too large for the API server in full (etcd refuses over 1.5
		// MiB, and the NNS would stay stale): the compact encoding,
		// which readers expand (docs/nns-size.md).
		if rep.state, err = compactState(st); err != nil {
			return report{}, err
		}
		rep.encoding = nnsencoding.CompactV1
	}
	m.raw = raw
	m.rep = rep
	return m.rep, nil
}

// compactState is nnsencoding.CompactJSON of st's canonical JSON, made
// from the values (a large node's state is a megabyte of JSON, which
// decoding and encoding again would take a tenth of a second for):
// routes.running without the routes routes.config holds as well.
func compactState(st *nmstate.State) ([]byte, error) {
	if st.Routes != nil && len(st.Routes.Config) > 0 && len(st.Routes.Running) > 0 {
		configured := make(map[string]bool, len(st.Routes.Config))
		var buf []byte
		var err error
		for i := range st.Routes.Config {
			if buf, err = nmstate.AppendRouteCanonicalJSON(buf[:0], &st.Routes.Config[i]); err != nil {
				return nil, fmt.Errorf("encoding state: %w", err)
			}
			configured[string(buf)] = true
		}
		running := make([]nmstate.Route, 0, len(st.Routes.Running))
		for i := range st.Routes.Running {
			if buf, err = nmstate.AppendRouteCanonicalJSON(buf[:0], &st.Routes.Running[i]); err != nil {
				return nil, fmt.Errorf("encoding state: %w", err)
			}
			if !configured[string(buf)] {
				running = append(running, st.Routes.Running[i])
			}
		}
		c := *st
		routes := *st.Routes
		routes.Running = running
		c.Routes = &routes
		st = &c
	}
	out, err := nmstate.AppendCanonicalJSON(nil, st)
	if err != nil {
		return nil, fmt.Errorf("encoding state: %w", err)
	}
	return out, nil
}

// canonicalJSON re-encodes a JSON document with object keys sorted and no
// insignificant space, numbers kept as written. The API server stores
// currentState as a generic object and returns it with sorted keys, so the
// state read back from the API and the state about to be written compare
// equal exactly when their content is equal.
func canonicalJSON(raw []byte) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return out, nil
}

// view is what the reporter knows of its NodeNetworkState object: the
// newest copy it has seen, from its own writes or the API's watch.
type view struct {
	obj *nmstatev1beta1.NodeNetworkState
	// state is obj's currentState as canonical JSON.
	state []byte
}

func newView(obj *nmstatev1beta1.NodeNetworkState) (*view, error) {
	if obj == nil {
		return nil, nil
	}
	c, err := canonicalJSON(obj.Status.CurrentState.Raw)
	if err != nil {
		return nil, fmt.Errorf("node network state %s: currentState: %w", obj.Name, err)
	}
	return &view{obj: obj, state: c}, nil
}

// newer reports whether the object seen in a watch event supersedes the
// known copy: another object (deleted and recreated), or a later version
// of the same one. Resource versions are compared as numbers when both
// are (etcd's revisions are); otherwise any different version counts as
// newer, which at worst costs one extra comparison, never a missed change.
func newer(known, seen *nmstatev1beta1.NodeNetworkState) bool {
	if known == nil {
		return true
	}
	if known.UID != seen.UID {
		return true
	}
	k, kerr := strconv.ParseUint(known.ResourceVersion, 10, 64)
	s, serr := strconv.ParseUint(seen.ResourceVersion, 10, 64)
	if kerr == nil && serr == nil {
		return s > k
	}
	return known.ResourceVersion != seen.ResourceVersion
}

// action is what the reporter must write.
type action int

const (
	// actNone: the object holds the report already.
	actNone action = iota
	// actCreate: the object does not exist; create it, then write status.
	actCreate
	// actStatus: the object exists with other content; write status.
	actStatus
	// actEncoding: the object's encoding annotation must change (set
	// before a compact state is written, removed after a full one is).
	actEncoding
)

func (a action) String() string {
	switch a {
	case actNone:
		return "none"
	case actCreate:
		return "create"
	case actStatus:
		return "status"
	case actEncoding:
		return "encoding"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// decide is the reporter's one decision: given the newest known copy of
// the object (nil = does not exist) and the report, what to write.
//
// The encoding annotation changes on the side that keeps every reader
// right: it is set before a compact state is written and removed only
// after the full state is (expanding a full state changes nothing), so
// no reader takes a compact state for a full one.
func decide(known *view, r report) action {
	switch {
	case known == nil:
		return actCreate
	case r.encoding != "" && known.encoding() != r.encoding:
		return actEncoding
	case !bytes.Equal(known.state, r.state),
		known.obj.Status.HandlerNmstateVersion != r.handlerVersion,
		known.obj.Status.HostNetworkManagerVersion != r.hostNMVersion:
		return actStatus
	case known.encoding() != r.encoding:
		return actEncoding
	}
	return actNone
}

// encoding is the object's currentState encoding annotation.
func (v *view) encoding() string {
	return v.obj.Annotations[nnsencoding.Annotation]
}

// nextStatus is the status to write over old for report r at now.
// lastSuccessfulUpdateTime moves only when currentState changes (upstream
// semantics: it tells when the state last changed); a version-only change
// keeps it. Conditions are left as they are.
func nextStatus(old shared.NodeNetworkStateStatus, oldState []byte, r report, now time.Time) shared.NodeNetworkStateStatus {
	s := *old.DeepCopy()
	if !bytes.Equal(oldState, r.state) || s.LastSuccessfulUpdateTime.IsZero() {
		s.CurrentState = shared.State{Raw: bytes.Clone(r.state)}
		s.LastSuccessfulUpdateTime = metav1.NewTime(now)
	}
	s.HandlerNmstateVersion = r.handlerVersion
	s.HostNetworkManagerVersion = r.hostNMVersion
	return s
}
