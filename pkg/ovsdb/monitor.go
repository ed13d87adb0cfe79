package ovsdb

import (
	"context"
	"encoding/json"
	"fmt"
)

// MonitorRequest selects the columns of one table to monitor (nil = all)
// and which changes to send (RFC 7047 4.1.5; nil Select = all of them).
type MonitorRequest struct {
	Columns []string       `json:"columns,omitempty"`
	Select  *MonitorSelect `json:"select,omitempty"`
}

// MonitorSelect says which kinds of change a monitor reports.
type MonitorSelect struct {
	Initial bool `json:"initial"`
	Insert  bool `json:"insert"`
	Delete  bool `json:"delete"`
	Modify  bool `json:"modify"`
}

// TableUpdates is table name → row uuid → the row's old and new values.
type TableUpdates map[string]map[string]RowUpdate

// RowUpdate is one row's change: Old is nil for an insert, New nil for a
// delete; for a modify Old holds only the columns that changed.
type RowUpdate struct {
	Old Row `json:"old,omitempty"`
	New Row `json:"new,omitempty"`
}

// Monitor starts monitor id on db: it returns the initial contents of the
// selected tables, and then calls onUpdate with every later change, in
// order, on the client's reading goroutine (so onUpdate must not call the
// client). The monitor ends with MonitorCancel or the connection.
func (c *Client) Monitor(ctx context.Context, db, id string, reqs map[string]MonitorRequest, onUpdate func(TableUpdates)) (TableUpdates, error) {
	c.mu.Lock()
	if _, dup := c.monitors[id]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("ovsdb monitor %q: already running", id)
	}
	// Registered before the request: the server may send an update right
	// after its reply, before this goroutine runs again.
	c.monitors[id] = onUpdate
	c.mu.Unlock()
	var initial TableUpdates
	if err := c.call(ctx, "monitor", []any{db, id, reqs}, &initial); err != nil {
		c.mu.Lock()
		delete(c.monitors, id)
		c.mu.Unlock()
		return nil, err
	}
	return initial, nil
}

// MonitorCancel ends monitor id.
func (c *Client) MonitorCancel(ctx context.Context, id string) error {
	c.mu.Lock()
	delete(c.monitors, id)
	c.mu.Unlock()
	var out json.RawMessage
	return c.call(ctx, "monitor_cancel", []any{id}, &out)
}
