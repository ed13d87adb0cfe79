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
	// NetNS, ResolvConf and UTSNS locate the node, as given to the backend.
	NetNS      string
	ResolvConf string
	UTSNS      string
	// Before is the state read before the apply.
	Before *nmstate.State
	// Desired is the desired state being applied (types resolved).
	Desired *nmstate.State
	// Revert is the desired state that restores Before on everything the
	// apply touches (nmstate's generate_revert).
	Revert *nmstate.State
}

// checkpointWire is the JSON form; states are embedded in their canonical
// JSON encoding and decoded strictly on read.
type checkpointWire struct {
	Version    int             `json:"version"`
	ID         string          `json:"id"`
	Created    time.Time       `json:"created"`
	Deadline   time.Time       `json:"deadline"`
	NetNS      string          `json:"netns,omitempty"`
	ResolvConf string          `json:"resolvConf,omitempty"`
	UTSNS      string          `json:"utsNS,omitempty"`
	Before     json.RawMessage `json:"before"`
	Desired    json.RawMessage `json:"desired"`
	Revert     json.RawMessage `json:"revert"`
}

const recordVersion = 1

// checkpointHead is the record without its states, which encodeRecord
// appends after these fields (the order checkpointWire has).
type checkpointHead struct {
	Version    int       `json:"version"`
	ID         string    `json:"id"`
	Created    time.Time `json:"created"`
	Deadline   time.Time `json:"deadline"`
	NetNS      string    `json:"netns,omitempty"`
	ResolvConf string    `json:"resolvConf,omitempty"`
	UTSNS      string    `json:"utsNS,omitempty"`
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
	head, err := json.Marshal(checkpointHead{
		Version: recordVersion, ID: c.ID, Created: c.Created.UTC(), Deadline: c.Deadline.UTC(),
		NetNS: c.NetNS, ResolvConf: c.ResolvConf, UTSNS: c.UTSNS,
	})
	if err != nil {
		return nil, err
	}
	states := []struct {
		name string
		v    *nmstate.State
		out  []byte
		err  error
	}{{name: "before", v: c.Before}, {name: "desired", v: c.Desired}, {name: "revert", v: c.Revert}}
	var wg sync.WaitGroup
	for i := range states {
		s := &states[i]
		wg.Go(func() {
			v := s.v
			if v == nil {
				v = &nmstate.State{}
			}
			s.out, s.err = nmstate.AppendCompactJSON(nil, v)
			if s.err != nil {
				s.err = fmt.Errorf("encoding checkpoint %s: %w", c.ID, s.err)
				return
			}
			if !check {
				return
			}
			if !json.Valid(s.out) {
				s.err = fmt.Errorf("checkpoint %s would not be readable: %s state is not valid JSON", c.ID, s.name)
			} else if _, err := nmstate.Decode(s.out); err != nil {
				s.err = fmt.Errorf("checkpoint %s would not be readable: %s state: %w", c.ID, s.name, err)
			}
		})
	}
	wg.Wait()
	size := len(head)
	for _, s := range states {
		if s.err != nil {
			return nil, s.err
		}
		size += len(s.name) + len(s.out) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-1]...) // without the closing brace
	for _, s := range states {
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
	*c = Checkpoint{ID: w.ID, Created: w.Created, Deadline: w.Deadline, NetNS: w.NetNS, ResolvConf: w.ResolvConf, UTSNS: w.UTSNS}
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
