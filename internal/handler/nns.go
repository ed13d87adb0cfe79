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
// byte comparison, not a second, canonical encoding as well.
type reportMemo struct {
	raw []byte
	rep report
}

func (m *reportMemo) report(st *nmstate.State, handlerVersion string) (report, error) {
	raw, err := nmstate.EncodeJSON(st)
	if err != nil {
		return report{}, fmt.Errorf("encoding state: %w", err)
	}
	if m.raw != nil && bytes.Equal(raw, m.raw) && m.rep.handlerVersion == handlerVersion {
		return m.rep, nil
	}
	c, err := canonicalJSON(raw)
	if err != nil {
		return report{}, err
	}
	m.raw = raw
	m.rep = report{state: c, handlerVersion: handlerVersion, hostNMVersion: NoNetworkManager}
	return m.rep, nil
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
)

func (a action) String() string {
	switch a {
	case actNone:
		return "none"
	case actCreate:
		return "create"
	case actStatus:
		return "status"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// decide is the reporter's one decision: given the newest known copy of
// the object (nil = does not exist) and the report, what to write.
func decide(known *view, r report) action {
	switch {
	case known == nil:
		return actCreate
	case !bytes.Equal(known.state, r.state),
		known.obj.Status.HandlerNmstateVersion != r.handlerVersion,
		known.obj.Status.HostNetworkManagerVersion != r.hostNMVersion:
		return actStatus
	}
	return actNone
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
