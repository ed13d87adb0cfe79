package ovsdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

const db = "Open_vSwitch"

// dial starts a private ovsdb-server (no ovs-vswitchd: these tests are
// about the protocol) and connects to it.
func dial(t *testing.T) *ovsdb.Client {
	t.Helper()
	o := ovsrun.ForTest(t, "-")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, o.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestEchoListDBsSchema(t *testing.T) {
	c := dial(t)
	if err := c.Echo(ctx(t)); err != nil {
		t.Fatal(err)
	}
	dbs, err := c.ListDBs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range dbs {
		found = found || d == db
	}
	if !found {
		t.Fatalf("list_dbs = %q, want %s in it", dbs, db)
	}
	s, err := c.Schema(ctx(t), db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), `"Bridge"`) {
		t.Fatalf("schema has no Bridge table: %.200s", s)
	}
}

// insertBridge inserts a bridge with one port and interface and links it
// from the root row, in one transaction, and returns the bridge's uuid.
func insertBridge(t *testing.T, c *ovsdb.Client, name string) ovsdb.UUID {
	t.Helper()
	res, err := c.Transact(ctx(t), db,
		ovsdb.Operation{Op: "insert", Table: "Interface", UUIDName: "i", Row: map[string]any{"name": name, "type": "internal"}},
		ovsdb.Operation{Op: "insert", Table: "Port", UUIDName: "p", Row: map[string]any{"name": name, "interfaces": ovsdb.NamedUUID("i")}},
		ovsdb.Operation{Op: "insert", Table: "Bridge", UUIDName: "b", Row: map[string]any{
			"name": name, "ports": ovsdb.Set{ovsdb.NamedUUID("p")}, "external_ids": ovsdb.Map{"owner": "test"}}},
		ovsdb.Operation{Op: "mutate", Table: "Open_vSwitch", Mutations: []ovsdb.Mutation{{Column: "bridges", Mutator: "insert", Value: ovsdb.Set{ovsdb.NamedUUID("b")}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	u, err := res[2].InsertedUUID()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTransactInsertSelectUpdateDelete(t *testing.T) {
	c := dial(t)
	u := insertBridge(t, c, "br0")
	res, err := c.Transact(ctx(t), db, ovsdb.Operation{Op: "select", Table: "Bridge",
		Where: []ovsdb.Condition{ovsdb.Where("name", "br0")}, Columns: []string{"_uuid", "name", "external_ids", "ports", "stp_enable"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Rows) != 1 {
		t.Fatalf("select found %d rows, want 1", len(res[0].Rows))
	}
	row := res[0].Rows[0]
	if row.UUID() != u || row.String("name") != "br0" || len(row.UUIDs("ports")) != 1 {
		t.Fatalf("row = %v, want br0 %s with one port", row, u)
	}
	if diff := cmp.Diff(map[string]string{"owner": "test"}, row.Map("external_ids")); diff != "" {
		t.Errorf("external_ids (-want +got):\n%s", diff)
	}
	if b, _ := row.Bool("stp_enable"); b {
		t.Errorf("stp_enable = true on a new bridge")
	}

	_, err = c.Transact(ctx(t), db, ovsdb.Operation{Op: "update", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)},
		Row: map[string]any{"stp_enable": true, "fail_mode": ovsdb.Set{"secure"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Transact(ctx(t), db, ovsdb.Operation{Op: "mutate", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)},
		Mutations: []ovsdb.Mutation{{Column: "external_ids", Mutator: "insert", Value: ovsdb.Map{"k": "v"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = c.Transact(ctx(t), db, ovsdb.Operation{Op: "select", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)}})
	if err != nil {
		t.Fatal(err)
	}
	row = res[0].Rows[0]
	if b, ok := row.Bool("stp_enable"); !b || !ok {
		t.Errorf("stp_enable = %v, %v after update", b, ok)
	}
	if got := row.String("fail_mode"); got != "secure" {
		t.Errorf("fail_mode = %q after update", got)
	}
	if diff := cmp.Diff(map[string]string{"owner": "test", "k": "v"}, row.Map("external_ids")); diff != "" {
		t.Errorf("external_ids after mutate (-want +got):\n%s", diff)
	}

	// Deleting the bridge and unlinking it from the root row: its port
	// and interface are garbage-collected (they are not root tables).
	res, err = c.Transact(ctx(t), db,
		ovsdb.Operation{Op: "mutate", Table: "Open_vSwitch", Mutations: []ovsdb.Mutation{{Column: "bridges", Mutator: "delete", Value: ovsdb.Set{u}}}},
		ovsdb.Operation{Op: "delete", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Count != 1 {
		t.Errorf("delete count = %d, want 1", res[1].Count)
	}
	res, err = c.Transact(ctx(t), db, ovsdb.Operation{Op: "select", Table: "Interface", Columns: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Rows) != 0 {
		t.Errorf("interfaces left after deleting their bridge: %v", res[0].Rows)
	}
}

// A transaction whose wait fails does nothing at all, and says which
// operation failed.
func TestTransactWaitFailsAtomically(t *testing.T) {
	c := dial(t)
	insertBridge(t, c, "br0")
	zero := 0
	_, err := c.Transact(ctx(t), db,
		ovsdb.Operation{Op: "update", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("name", "br0")}, Row: map[string]any{"stp_enable": true}},
		ovsdb.Operation{Op: "wait", Table: "Bridge", Timeout: &zero, Where: []ovsdb.Condition{ovsdb.Where("name", "br0")},
			Columns: []string{"stp_enable"}, Until: "==", Rows: []map[string]any{{"stp_enable": false}}},
	)
	var te *ovsdb.TxnError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *TxnError", err)
	}
	if te.Index != 1 || te.Op != "wait" || te.Err != "timed out" {
		t.Errorf("TxnError = %+v, want operation 1 (wait) timed out", te)
	}
	res, err := c.Transact(ctx(t), db, ovsdb.Operation{Op: "select", Table: "Bridge", Columns: []string{"stp_enable"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := res[0].Rows[0].Bool("stp_enable"); b {
		t.Error("the update of a failed transaction was kept")
	}
	// A wait that holds lets the transaction through.
	_, err = c.Transact(ctx(t), db,
		ovsdb.Operation{Op: "wait", Table: "Bridge", Timeout: &zero, Where: []ovsdb.Condition{ovsdb.Where("name", "br0")},
			Columns: []string{"stp_enable"}, Until: "==", Rows: []map[string]any{{"stp_enable": false}}},
		ovsdb.Operation{Op: "comment", Comment: "knmstate test"},
	)
	if err != nil {
		t.Fatal(err)
	}
}

// A commit-time constraint (a port referring to a missing row) is
// reported as a commit failure.
func TestTransactConstraintError(t *testing.T) {
	c := dial(t)
	_, err := c.Transact(ctx(t), db, ovsdb.Operation{Op: "insert", Table: "Port", Row: map[string]any{"name": "p", "interfaces": ovsdb.UUID("00000000-0000-0000-0000-000000000001")}})
	var te *ovsdb.TxnError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *TxnError", err)
	}
	if !strings.Contains(te.Error(), "referential integrity") {
		t.Errorf("error %q does not name the constraint", te)
	}
}

func TestMonitorReportsChanges(t *testing.T) {
	c := dial(t)
	insertBridge(t, c, "br0")
	updates := make(chan ovsdb.TableUpdates, 10)
	initial, err := c.Monitor(ctx(t), db, "m1", map[string]ovsdb.MonitorRequest{"Bridge": {Columns: []string{"name", "stp_enable"}}},
		func(u ovsdb.TableUpdates) { updates <- u })
	if err != nil {
		t.Fatal(err)
	}
	if len(initial["Bridge"]) != 1 {
		t.Fatalf("initial = %v, want br0", initial)
	}
	insertBridge(t, c, "br1")
	select {
	case u := <-updates:
		var names []string
		for _, ru := range u["Bridge"] {
			if ru.Old == nil {
				names = append(names, ru.New.String("name"))
			}
		}
		if diff := cmp.Diff([]string{"br1"}, names); diff != "" {
			t.Errorf("inserted bridges (-want +got):\n%s", diff)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update after an insert")
	}
	if err := c.MonitorCancel(ctx(t), "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Monitor(ctx(t), db, "m1", map[string]ovsdb.MonitorRequest{"Bridge": {}}, func(ovsdb.TableUpdates) {}); err != nil {
		t.Fatalf("monitor id not free after cancel: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	if _, err := ovsdb.Dial(ctx(t), "/run/x.sock"); err == nil || !strings.Contains(err.Error(), "unix:PATH") {
		t.Errorf("bad address: err = %v", err)
	}
	_, err := ovsdb.Dial(ctx(t), "unix:"+t.TempDir()+"/none.sock")
	if err == nil || !strings.Contains(err.Error(), "connecting to the OVS database at unix:") {
		t.Errorf("missing socket: err = %v", err)
	}
}

func TestCallsFailAfterClose(t *testing.T) {
	c := dial(t)
	c.Close()
	if err := c.Echo(ctx(t)); !errors.Is(err, ovsdb.ErrClosed) {
		t.Errorf("echo after close: err = %v, want ErrClosed", err)
	}
}
