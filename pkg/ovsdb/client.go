package ovsdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// DefaultAddress is where Open vSwitch's ovsdb-server listens on a host.
const DefaultAddress = "unix:/run/openvswitch/db.sock"

// ErrClosed is returned for calls on a closed (or broken) connection.
var ErrClosed = errors.New("ovsdb: connection closed")

// Client is one JSON-RPC connection to an OVSDB server. Its methods are safe
// for concurrent use.
type Client struct {
	addr string
	conn net.Conn

	wmu sync.Mutex // serialises writes
	enc *json.Encoder

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]chan response
	monitors map[string]func(TableUpdates)
	err      error // why the connection ended
	done     chan struct{}
}

type request struct {
	Method string `json:"method"`
	Params []any  `json:"params"`
	ID     any    `json:"id"`
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// RPCError is an error answered by the server for a whole request.
type RPCError struct {
	Method string
	Detail string
}

func (e *RPCError) Error() string { return fmt.Sprintf("ovsdb %s: %s", e.Method, e.Detail) }

// Dial connects to addr: "unix:PATH" or "tcp:HOST:PORT" (ovs-vsctl's
// syntax).
func Dial(ctx context.Context, addr string) (*Client, error) {
	network, target, ok := strings.Cut(addr, ":")
	if !ok || target == "" || (network != "unix" && network != "tcp") {
		return nil, fmt.Errorf("ovsdb address %q: want unix:PATH or tcp:HOST:PORT", addr)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, target)
	if err != nil {
		return nil, fmt.Errorf("connecting to the OVS database at %s: %w", addr, err)
	}
	return NewClient(addr, conn), nil
}

// NewClient runs the protocol over an established connection, which the
// client owns from now on.
func NewClient(addr string, conn net.Conn) *Client {
	c := &Client{
		addr: addr, conn: conn, enc: json.NewEncoder(conn),
		pending: map[uint64]chan response{}, monitors: map[string]func(TableUpdates){},
		done: make(chan struct{}),
	}
	go c.read()
	return c
}

// Address is what the client was dialled with.
func (c *Client) Address() string { return c.addr }

// Close ends the connection; calls in flight fail with ErrClosed.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) read() {
	dec := json.NewDecoder(c.conn)
	dec.UseNumber()
	var err error
	for {
		var m response
		if err = dec.Decode(&m); err != nil {
			break
		}
		if m.Method != "" {
			c.notify(m)
			continue
		}
		var id uint64
		if json.Unmarshal(m.ID, &id) != nil {
			continue // an answer to nothing we sent
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	c.mu.Lock()
	if errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	c.err = fmt.Errorf("%w: %w", ErrClosed, err)
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// notify handles a request or notification from the server: echo is
// answered (the server drops clients that do not), monitor updates go to
// their monitor's callback, on the reading goroutine.
func (c *Client) notify(m response) {
	switch m.Method {
	case "echo":
		var params []any
		_ = json.Unmarshal(m.Params, &params)
		if params == nil {
			params = []any{}
		}
		c.write(map[string]any{"result": params, "error": nil, "id": m.ID})
	case "update":
		var params []json.RawMessage
		if json.Unmarshal(m.Params, &params) != nil || len(params) != 2 {
			return
		}
		var id string
		if json.Unmarshal(params[0], &id) != nil {
			return
		}
		var u TableUpdates
		if decodeStrict(params[1], &u) != nil {
			return
		}
		c.mu.Lock()
		f := c.monitors[id]
		c.mu.Unlock()
		if f != nil {
			f(u)
		}
	}
}

func (c *Client) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(v)
}

// call sends one request and decodes its result into out (if not nil).
func (c *Client) call(ctx context.Context, method string, params []any, out any) error {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = []any{}
	}
	if err := c.write(request{Method: method, Params: params, ID: id}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("ovsdb %s: sending: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("ovsdb %s: %w", method, ctx.Err())
	case m, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return fmt.Errorf("ovsdb %s: %w", method, err)
		}
		if len(m.Error) > 0 && !bytes.Equal(m.Error, []byte("null")) {
			return &RPCError{Method: method, Detail: errorText(m.Error)}
		}
		if out == nil {
			return nil
		}
		if err := decodeStrict(m.Result, out); err != nil {
			return fmt.Errorf("ovsdb %s: decoding the result: %w", method, err)
		}
		return nil
	}
}

// errorText renders a JSON-RPC error (a string or an {error, details} object).
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var e struct {
		Error   string `json:"error"`
		Details string `json:"details"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		if e.Details != "" {
			return e.Error + ": " + e.Details
		}
		return e.Error
	}
	return string(raw)
}

func decodeStrict(raw json.RawMessage, out any) error {
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	return dec.Decode(out)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// Echo sends an echo request and waits for its answer: a liveness probe.
func (c *Client) Echo(ctx context.Context) error {
	var out []string
	if err := c.call(ctx, "echo", []any{"knmstate"}, &out); err != nil {
		return err
	}
	if len(out) != 1 || out[0] != "knmstate" {
		return fmt.Errorf("ovsdb echo: answered %q", out)
	}
	return nil
}

// ListDBs returns the names of the server's databases.
func (c *Client) ListDBs(ctx context.Context) ([]string, error) {
	var out []string
	err := c.call(ctx, "list_dbs", nil, &out)
	return out, err
}

// Schema returns a database's schema as the server sends it.
func (c *Client) Schema(ctx context.Context, db string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.call(ctx, "get_schema", []any{db}, &out)
	return out, err
}

// TxnError is a transaction the server refused: the first failing
// operation (or the commit) and why. Nothing of the transaction was done.
type TxnError struct {
	// Index is the failing operation's position; len(ops) for a failure
	// at commit (a constraint such as referential integrity).
	Index   int
	Op      string
	Table   string
	Err     string
	Details string
}

func (e *TxnError) Error() string {
	what := "commit"
	if e.Op != "" {
		what = fmt.Sprintf("operation %d (%s %s)", e.Index, e.Op, e.Table)
	}
	if e.Details != "" {
		return fmt.Sprintf("ovsdb transaction: %s: %s: %s", what, e.Err, e.Details)
	}
	return fmt.Sprintf("ovsdb transaction: %s: %s", what, e.Err)
}

// Transact runs ops as one transaction on db: all of them or none. A
// refused transaction returns a *TxnError; the results are returned
// either way (RFC 7047 gives one per operation, and one more for a commit
// error).
func (c *Client) Transact(ctx context.Context, db string, ops ...Operation) ([]OperationResult, error) {
	params := make([]any, 0, len(ops)+1)
	params = append(params, db)
	for _, op := range ops {
		params = append(params, op)
	}
	var res []*OperationResult
	if err := c.call(ctx, "transact", params, &res); err != nil {
		return nil, err
	}
	out := make([]OperationResult, len(res))
	for i, r := range res {
		if r != nil {
			out[i] = *r
		}
	}
	for i, r := range out {
		if r.Error == "" {
			continue
		}
		e := &TxnError{Index: i, Err: r.Error, Details: r.Details}
		if i < len(ops) {
			e.Op, e.Table = ops[i].Op, ops[i].Table
		}
		return out, e
	}
	if len(out) < len(ops) {
		return out, fmt.Errorf("ovsdb transaction: %d results for %d operations", len(out), len(ops))
	}
	return out, nil
}
