package apply

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Checkpoint is the record of a pending apply. It holds everything another
// process needs to undo the apply after this one is gone: where the node
// is (namespaces, resolv.conf), what it looked like before, and the state
// that restores that.
type Checkpoint struct {
	ID string
	// Created is when the record was written, just before the first change.
	Created time.Time
	// Deadline is when the apply rolls back unless committed.
	Deadline time.Time
	// NetNS, ResolvConf and UTSNS locate the node, as given to the backend;
	// OVSDB is its Open vSwitch database socket ("" = none given).
	NetNS      string
	ResolvConf string
	UTSNS      string
	OVSDB      string
	// Before is the state read before the apply.
	Before *nmstate.State
	// Desired is the desired state being applied (types resolved).
	Desired *nmstate.State
	// Revert is the desired state that restores Before on everything the
	// apply touches (nmstate's generate_revert).
	Revert *nmstate.State
	// Backend names the backend that applied ("" = kernel), and
	// BackendCheckpoint is that backend's own checkpoint (a
	// NetworkManager checkpoint path), rolled back or destroyed with the
	// record.
	Backend           string
	BackendCheckpoint string
	// BackendAddress is how another process reaches the backend (the
	// D-Bus address of NetworkManager's bus; "" = the default).
	BackendAddress string
}

// checkpointWire is the JSON form; states are embedded in their canonical
// JSON encoding and decoded strictly on read.
type checkpointWire struct {
	Version           int             `json:"version"`
	ID                string          `json:"id"`
	Created           time.Time       `json:"created"`
	Deadline          time.Time       `json:"deadline"`
	NetNS             string          `json:"netns,omitempty"`
	ResolvConf        string          `json:"resolvConf,omitempty"`
	UTSNS             string          `json:"utsNS,omitempty"`
	Backend           string          `json:"backend,omitempty"`
	BackendCheckpoint string          `json:"backendCheckpoint,omitempty"`
	BackendAddress    string          `json:"backendAddress,omitempty"`
	OVSDB             string          `json:"ovsdb,omitempty"`
	Before            json.RawMessage `json:"before"`
	Desired           json.RawMessage `json:"desired"`
	Revert            json.RawMessage `json:"revert"`
}

const recordVersion = 1

// checkpointHead is the record without its states, which encodeRecord
// appends after these fields (the order checkpointWire has).
type checkpointHead struct {
	Version           int       `json:"version"`
	ID                string    `json:"id"`
	Created           time.Time `json:"created"`
	Deadline          time.Time `json:"deadline"`
	NetNS             string    `json:"netns,omitempty"`
	ResolvConf        string    `json:"resolvConf,omitempty"`
	UTSNS             string    `json:"utsNS,omitempty"`
	Backend           string    `json:"backend,omitempty"`
	BackendCheckpoint string    `json:"backendCheckpoint,omitempty"`
	BackendAddress    string    `json:"backendAddress,omitempty"`
	OVSDB             string    `json:"ovsdb,omitempty"`
}

// MarshalJSON encodes the record for the state directory.
func (c *Checkpoint) MarshalJSON() ([]byte, error) {
	return c.encodeRecord(false)
}

// encodeRecord builds the record's JSON. The three states are encoded
// concurrently, in compact canonical JSON; with check, each is also
// decoded again as ReadCheckpoint will, so a record that could not be read
// back is refused before the apply changes anything. (The fields around
// the states are plain values encoding/json always reads back.)
func (c *Checkpoint) encodeRecord(check bool) ([]byte, error) {
	e := c.startEncoding(check, nil)
	data, err := e.assemble(c)
	if err == nil {
		err = e.checkErr(c.ID)
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// recordEncoding is a record's three states being encoded in the
// background, in record order: before, desired, revert. Apply starts each
// state as soon as it is known, so the encoding runs while the revert
// state is computed; the checks (decoding the JSON again) start once the
// record is assembled and run while it is written and synced, off the
// path to the first change.
type recordEncoding [3]*stateEncoding

// recordStates names the states in record order.
var recordStates = [3]string{"before", "desired", "revert"}

// startEncoding starts encoding the states of c that reuse does not
// already hold (reuse may be nil).
func (c *Checkpoint) startEncoding(check bool, reuse *recordEncoding) *recordEncoding {
	e := &recordEncoding{}
	if reuse != nil {
		*e = *reuse
	}
	for i, v := range [3]*nmstate.State{c.Before, c.Desired, c.Revert} {
		if e[i] == nil {
			e[i] = encodeState(recordStates[i], v, check)
		}
	}
	return e
}

// stateEncoding is one state being encoded by its own goroutine, then
// checked by another.
type stateEncoding struct {
	name  string
	check bool
	// encoded is closed once out and encErr are set: the state itself is
	// not read any more.
	encoded chan struct{}
	out     []byte
	encErr  error
	// checked is closed once the check started by startCheck is done
	// (at once without check); invalid and decErr are its findings.
	checkOnce sync.Once
	checked   chan struct{}
	invalid   bool
	decErr    error
}

func encodeState(name string, v *nmstate.State, check bool) *stateEncoding {
	e := &stateEncoding{name: name, check: check, encoded: make(chan struct{}), checked: make(chan struct{})}
	go func() {
		defer close(e.encoded)
		if v == nil {
			v = &nmstate.State{}
		}
		e.out, e.encErr = nmstate.AppendCompactJSON(nil, v)
	}()
	return e
}

// startCheck starts the check on its own goroutine, unless it ran or
// runs already.
func (e *stateEncoding) startCheck() {
	e.checkOnce.Do(func() { go e.runCheck() })
}

// runCheck decodes the state's JSON again as ReadCheckpoint will.
func (e *stateEncoding) runCheck() {
	defer close(e.checked)
	<-e.encoded
	if e.encErr != nil || !e.check {
		return
	}
	if !json.Valid(e.out) {
		e.invalid = true
	} else if _, err := nmstate.Decode(e.out); err != nil {
		e.decErr = err
	}
}

// err is the state's failure as the record with this id reports it; the
// state must be checked.
func (e *stateEncoding) err(id string) error {
	switch {
	case e.encErr != nil:
		return fmt.Errorf("encoding checkpoint %s: %w", id, e.encErr)
	case e.invalid:
		return fmt.Errorf("checkpoint %s would not be readable: %s state is not valid JSON", id, e.name)
	case e.decErr != nil:
		return fmt.Errorf("checkpoint %s would not be readable: %s state: %w", id, e.name, e.decErr)
	}
	return nil
}

// wait waits until no goroutine of e runs any more (states not started
// are nil). It finishes the checks too, so that no goroutine outlives the
// apply, even on a path that reports another error.
func (e *recordEncoding) wait() {
	for _, s := range e {
		if s != nil {
			s.startCheck()
			<-s.checked
		}
	}
}

// startChecks starts every state's check, one after the other on one
// goroutine: they run while the record is synced, and must leave a
// processor free for the writer to resume on.
func (e *recordEncoding) startChecks() {
	go func() {
		for _, s := range e {
			s.checkOnce.Do(func() { s.runCheck() })
		}
	}()
}

// checkErr checks every state and returns the first failure in record
// order.
func (e *recordEncoding) checkErr(id string) error {
	for _, s := range e {
		s.startCheck()
	}
	for _, s := range e {
		<-s.checked
	}
	for _, s := range e {
		if err := s.err(id); err != nil {
			return err
		}
	}
	return nil
}

// assemble waits for the states' JSON and builds the record around it. A
// failure is reported as checkErr would (every state checked, first
// failure in record order).
func (e *recordEncoding) assemble(c *Checkpoint) ([]byte, error) {
	head, err := json.Marshal(checkpointHead{
		Version: recordVersion, ID: c.ID, Created: c.Created.UTC(), Deadline: c.Deadline.UTC(),
		NetNS: c.NetNS, ResolvConf: c.ResolvConf, UTSNS: c.UTSNS,
		Backend: c.Backend, BackendCheckpoint: c.BackendCheckpoint, BackendAddress: c.BackendAddress, OVSDB: c.OVSDB,
	})
	if err != nil {
		e.wait()
		return nil, err
	}
	size := len(head)
	for _, s := range e {
		<-s.encoded
		if s.encErr != nil {
			return nil, e.checkErr(c.ID)
		}
		size += len(s.name) + len(s.out) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-1]...) // without the closing brace
	for _, s := range e {
		out = append(out, ',', '"')
		out = append(out, s.name...)
		out = append(out, '"', ':')
		out = append(out, s.out...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON decodes a record written by MarshalJSON.
func (c *Checkpoint) UnmarshalJSON(data []byte) error {
	var w checkpointWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Version != recordVersion {
		return fmt.Errorf("checkpoint record version %d, want %d", w.Version, recordVersion)
	}
	if w.ID == "" {
		return errors.New("checkpoint record without id")
	}
	*c = Checkpoint{ID: w.ID, Created: w.Created, Deadline: w.Deadline, NetNS: w.NetNS, ResolvConf: w.ResolvConf, UTSNS: w.UTSNS,
		Backend: w.Backend, BackendCheckpoint: w.BackendCheckpoint, BackendAddress: w.BackendAddress, OVSDB: w.OVSDB}
	for _, s := range []struct {
		name string
		src  json.RawMessage
		dst  **nmstate.State
	}{{"before", w.Before, &c.Before}, {"desired", w.Desired, &c.Desired}, {"revert", w.Revert, &c.Revert}} {
		st, err := nmstate.Decode(s.src)
		if err != nil {
			return fmt.Errorf("checkpoint %s %s state: %w", w.ID, s.name, err)
		}
		*s.dst = st
	}
	return nil
}

// newID returns a checkpoint id: the creation time (sortable, readable in
// logs) and a random suffix (unique across processes).
func newID(now time.Time) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("checkpoint id: %w", err)
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b), nil
}

// Action is what to do about a pending checkpoint.
type Action int

const (
	// Wait: the checkpoint may still be committed; look again at Decision.At.
	Wait Action = iota + 1
	// RollbackNow: the deadline has passed; restore the pre-apply state.
	RollbackNow
)

func (a Action) String() string {
	switch a {
	case Wait:
		return "wait"
	case RollbackNow:
		return "rollback"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// At is when to decide again (the deadline) for Wait.
	At time.Time
}

// Decide says what a process that finds a checkpoint record (at start-up,
// or the watchdog when it wakes) must do with it at time now: roll back
// once the deadline has passed, otherwise wait for the deadline. A record
// with no deadline is treated as expired: nothing can ever commit it in
// time.
func Decide(rec *Checkpoint, now time.Time) Decision {
	if rec.Deadline.IsZero() || !now.Before(rec.Deadline) {
		return Decision{Action: RollbackNow}
	}
	return Decision{Action: Wait, At: rec.Deadline}
}
