package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// testOptions uses the fake engine, a fresh state directory and short
// verification pauses (the retry count is what is tested, not the time).
func testOptions(t *testing.T) Options {
	return Options{
		StateDir:       t.TempDir(),
		VerifyRetries:  3,
		VerifyInterval: time.Millisecond,
		Now:            func() time.Time { return t0 },
		engine:         fakeEngine(),
	}
}

func newNode(ifaces ...nmstate.Interface) *fakeNode {
	return &fakeNode{state: st.State(st.Interfaces(ifaces...))}
}

func names(s *nmstate.State) map[string]string {
	out := map[string]string{}
	for _, i := range s.Interfaces {
		mtu := "-"
		if i.MTU != nil {
			mtu = strconv.FormatUint(*i.MTU, 10)
		}
		out[i.Name] = string(i.Type) + " mtu " + mtu
	}
	return out
}

func assertNoCheckpoint(t *testing.T, dir string) {
	t.Helper()
	if rec, err := ReadCheckpoint(dir); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("checkpoint record left behind: %v, %v", rec, err)
	}
}

func TestApplySuccessCommits(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0", st.MTU(1400)))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Committed || res.Checkpoint == "" {
		t.Errorf("result committed=%v checkpoint=%q, want committed with an id", res.Committed, res.Checkpoint)
	}
	want := map[string]string{"eth1": "ethernet mtu 1500", "br0": "linux-bridge mtu 1400"}
	if diff := cmp.Diff(want, names(node.state)); diff != "" {
		t.Errorf("node after apply (-want +got):\n%s", diff)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestApplyRollsBackOnExecuteError(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	node.failAt = 2 // the first change lands, the second fails
	o := testOptions(t)
	desired := st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)), st.LinuxBridge("br0")))
	_, err := Apply(context.Background(), node, desired, o)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Apply error = %v, want a *Failure", err)
	}
	if f.Rollback != nil {
		t.Errorf("rollback failed: %v", f.Rollback)
	}
	want := map[string]string{"eth1": "ethernet mtu 1500"}
	if diff := cmp.Diff(want, names(node.state)); diff != "" {
		t.Errorf("node after failed apply (-want +got):\n%s", diff)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestApplyRollsBackOnVerifyFailure(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	// The node accepts the change but keeps a different MTU: verification
	// must catch it on every retry and roll back.
	node.mangle = func(i *nmstate.Interface) {
		if i.MTU != nil && *i.MTU == 9000 {
			i.MTU = st.Ptr(uint64(8000))
		}
	}
	o := testOptions(t)
	_, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), o)
	if got := nmstate.KindOf(err); got != nmstate.Verification {
		t.Fatalf("Apply error kind %v (%v), want Verification", got, err)
	}
	var f *Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("Apply error = %v, want a *Failure with a successful rollback", err)
	}
	want := map[string]string{"eth1": "ethernet mtu 1500"}
	if diff := cmp.Diff(want, names(node.state)); diff != "" {
		t.Errorf("node after failed verification (-want +got):\n%s", diff)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestApplyWithNoVerifyKeepsUnverifiedChange(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	node.mangle = func(i *nmstate.Interface) { i.MTU = st.Ptr(uint64(8000)) }
	o := testOptions(t)
	o.NoVerify = true
	if _, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), o); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 8000"}, names(node.state)); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
}

func TestCheckpointWrittenBeforeFirstExecute(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	o.Timeout = 90 * time.Second
	o.NetNS, o.ResolvConf, o.UTSNS = "knmt-x", "/tmp/resolv.conf", "/proc/1/ns/uts"
	var seen *Checkpoint
	node.beforeExecute = func() {
		if seen != nil {
			return
		}
		rec, err := ReadCheckpoint(o.StateDir)
		if err != nil {
			t.Errorf("no checkpoint record at the first Execute: %v", err)
			return
		}
		seen = rec
	}
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if seen == nil {
		t.Fatal("Execute never saw a checkpoint record")
	}
	type summary struct {
		ID, NetNS, ResolvConf, UTSNS string
		Created, Deadline            time.Time
		Before, Revert               map[string]string
	}
	want := summary{
		ID: res.Checkpoint, NetNS: "knmt-x", ResolvConf: "/tmp/resolv.conf", UTSNS: "/proc/1/ns/uts",
		Created: t0, Deadline: t0.Add(90 * time.Second),
		Before: map[string]string{"eth1": "ethernet mtu 1500"},
		Revert: map[string]string{"eth1": "ethernet mtu 1500"},
	}
	got := summary{seen.ID, seen.NetNS, seen.ResolvConf, seen.UTSNS, seen.Created, seen.Deadline, names(seen.Before), names(seen.Revert)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record at first Execute (-want +got):\n%s", diff)
	}
}

func TestInvalidDesiredStateChangesNothing(t *testing.T) {
	node := newNode(st.Ethernet("eth1"))
	o := testOptions(t)
	_, err := Apply(context.Background(), node, st.State(st.Interfaces(st.VLAN("eth1.5000", "eth1", 5000))), o)
	if got := nmstate.KindOf(err); got != nmstate.InvalidArgument {
		t.Errorf("Apply error kind %v (%v), want InvalidArgument", got, err)
	}
	if len(node.executed) != 0 || node.ops != 0 {
		t.Errorf("executed %v on invalid input", node.executed)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestEmptyDesiredStateIsNoop(t *testing.T) {
	node := newNode(st.Ethernet("eth1"))
	o := testOptions(t)
	o.StateDir = "" // not needed: nothing is changed
	res, err := Apply(context.Background(), node, &nmstate.State{}, o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Plan.Empty() || res.Checkpoint != "" || node.ops != 0 {
		t.Errorf("empty apply: plan %q checkpoint %q ops %d, want nothing", res.Plan, res.Checkpoint, node.ops)
	}
}

func TestDryRunPlansOnly(t *testing.T) {
	node := newNode(st.Ethernet("eth1"))
	o := testOptions(t)
	o.DryRun = true
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0"))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if res.Plan.Empty() || node.ops != 0 {
		t.Errorf("dry run: plan %q, %d ops executed; want a plan and no execution", res.Plan, node.ops)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestMemoryOnlyTurnsAbsentIntoDown(t *testing.T) {
	node := newNode(st.LinuxBridge("br0"))
	o := testOptions(t)
	o.MemoryOnly = true
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0", st.Absent()))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := res.Desired.Interfaces[0].State; got != nmstate.StateDown {
		t.Errorf("applied state %q, want down", got)
	}
}

func TestSecondApplyWhileCheckpointPendingFails(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	o.NoCommit = true
	first, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))), o)
	if err != nil {
		t.Fatalf("first Apply: %v", err)
	}
	if first.Committed {
		t.Error("NoCommit apply reported committed")
	}
	_, err = Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1300)))), o)
	if !errors.Is(err, ErrCheckpointExists) {
		t.Fatalf("second Apply error = %v, want ErrCheckpointExists", err)
	}
	id, err := Commit(context.Background(), o.StateDir)
	if err != nil || id != first.Checkpoint {
		t.Fatalf("Commit = %q, %v; want %q", id, err, first.Checkpoint)
	}
	if _, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1300)))), o); err != nil {
		t.Fatalf("Apply after commit: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 1300"}, names(node.state)); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
}

func TestApplyWhileLockedIsBusy(t *testing.T) {
	o := testOptions(t)
	unlock, err := lockDir(context.Background(), o.StateDir, false)
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	defer unlock()
	_, err = Apply(context.Background(), newNode(), st.State(st.Interfaces(st.LinuxBridge("br0"))), o)
	if !errors.Is(err, ErrBusy) {
		t.Errorf("Apply error = %v, want ErrBusy", err)
	}
}

func TestRollbackRestoresPendingCheckpoint(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	o.NoCommit = true
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)), st.LinuxBridge("br0"))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	id, err := RollbackWithOptions(context.Background(), node, o.StateDir, RollbackOptions{VerifyInterval: time.Millisecond, engine: fakeEngine()})
	if err != nil || id != res.Checkpoint {
		t.Fatalf("Rollback = %q, %v; want %q", id, err, res.Checkpoint)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 1500"}, names(node.state)); diff != "" {
		t.Errorf("node after rollback (-want +got):\n%s", diff)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestCommitAndRollbackWithoutCheckpointFail(t *testing.T) {
	dir := t.TempDir()
	if _, err := Commit(context.Background(), dir); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("Commit error = %v, want ErrNoCheckpoint", err)
	}
	if _, err := Rollback(context.Background(), newNode(), dir); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("Rollback error = %v, want ErrNoCheckpoint", err)
	}
}

func TestFailedRollbackIsReported(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	node.failAt = 1 // the apply fails, and so does ...
	o := testOptions(t)
	calls := 0
	node.beforeExecute = func() {
		calls++
		if calls == 2 {
			node.failAt = node.ops + 1 // ... the rollback's first operation
		}
	}
	_, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), o)
	var f *Failure
	if !errors.As(err, &f) || f.Rollback == nil {
		t.Fatalf("Apply error = %v, want a *Failure with a failed rollback", err)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestDecide(t *testing.T) {
	rec := &Checkpoint{ID: "x", Created: t0, Deadline: t0.Add(time.Minute)}
	tests := []struct {
		name string
		rec  *Checkpoint
		now  time.Time
		want Decision
	}{
		{"before the deadline waits until the deadline", rec, t0.Add(time.Second), Decision{Action: Wait, At: t0.Add(time.Minute)}},
		{"at the deadline rolls back", rec, t0.Add(time.Minute), Decision{Action: RollbackNow}},
		{"after the deadline rolls back", rec, t0.Add(time.Hour), Decision{Action: RollbackNow}},
		{"a record without deadline rolls back", &Checkpoint{ID: "y"}, t0, Decision{Action: RollbackNow}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Decide(tc.rec, tc.now)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckpointRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rec := &Checkpoint{
		ID: "20261121T120000Z-01020304", Created: t0, Deadline: t0.Add(time.Minute),
		NetNS: "knmt-1", ResolvConf: "/r", UTSNS: "/u",
		Before:  st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24")))),
		Desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))),
		Revert:  st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
	}
	if err := writeCheckpoint(dir, rec); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := ReadCheckpoint(dir)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	enc := func(c *Checkpoint) []string {
		var out []string
		for _, s := range []*nmstate.State{c.Before, c.Desired, c.Revert} {
			b, err := nmstate.EncodeYAML(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return append(out, c.ID, c.NetNS, c.ResolvConf, c.UTSNS, c.Created.String(), c.Deadline.String())
	}
	if diff := cmp.Diff(enc(rec), enc(got)); diff != "" {
		t.Errorf("record round trip (-want +got):\n%s", diff)
	}
	// Only the record is left: the temporary file was renamed.
	entries, _ := os.ReadDir(dir)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if diff := cmp.Diff([]string{recordFile}, files); diff != "" {
		t.Errorf("state directory (-want +got):\n%s", diff)
	}
}

func TestCorruptRecordIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, recordFile), []byte(`{"version":1,"id":"x","before":{"interfaces":7}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(dir); err == nil || errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("ReadCheckpoint of a corrupt record = %v, want a decode error", err)
	}
}

func TestWatchRollsBackAtDeadline(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	o.NoCommit = true
	o.Timeout = time.Minute
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	// The watchdog's clock is already past the deadline.
	ro := RollbackOptions{VerifyInterval: time.Millisecond, Now: func() time.Time { return t0.Add(2 * time.Minute) }, engine: fakeEngine()}
	open := func(ctx context.Context, rec *Checkpoint) (Backend, func(), error) { return node, func() {}, nil }
	rolled, err := Watch(context.Background(), o.StateDir, res.Checkpoint, open, ro, time.Millisecond)
	if err != nil || !rolled {
		t.Fatalf("Watch = %v, %v; want a successful rollback", rolled, err)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 1500"}, names(node.state)); diff != "" {
		t.Errorf("node after watchdog rollback (-want +got):\n%s", diff)
	}
	assertNoCheckpoint(t, o.StateDir)
}

func TestWatchExitsAfterCommit(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	o.NoCommit = true
	res, err := Apply(context.Background(), node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if _, err := Commit(context.Background(), o.StateDir); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	ro := RollbackOptions{Now: func() time.Time { return t0 }, engine: fakeEngine()}
	open := func(ctx context.Context, rec *Checkpoint) (Backend, func(), error) {
		t.Error("Watch opened the node of a committed checkpoint")
		return node, func() {}, nil
	}
	rolled, err := Watch(context.Background(), o.StateDir, res.Checkpoint, open, ro, time.Millisecond)
	if err != nil || rolled {
		t.Errorf("Watch = %v, %v; want (false, nil)", rolled, err)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 1400"}, names(node.state)); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
}

func TestCommitDiscardsUnreadableRecord(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, recordFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Commit(context.Background(), dir); err == nil || errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("Commit of an unreadable record = %v, want an error saying it was discarded", err)
	}
	assertNoCheckpoint(t, dir)
}

func TestInterruptedApplyStillRollsBack(t *testing.T) {
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	o := testOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first change lands, then the user interrupts (SIGINT cancels the
	// context) before the second.
	node.mangle = func(*nmstate.Interface) { cancel() }
	_, err := Apply(ctx, node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)), st.LinuxBridge("br0"))), o)
	var f *Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("Apply error = %v, want a *Failure with a successful rollback", err)
	}
	if !errors.Is(f.Err, context.Canceled) || len(node.executed) == 0 || !strings.Contains(node.executed[0], "9000") {
		t.Errorf("interrupted at the wrong step: %v, executed %q", f.Err, node.executed)
	}
	if diff := cmp.Diff(map[string]string{"eth1": "ethernet mtu 1500"}, names(node.state)); diff != "" {
		t.Errorf("node after interrupted apply (-want +got):\n%s", diff)
	}
}
