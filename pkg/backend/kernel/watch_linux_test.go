package kernel

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// watchBackend opens a backend on a fresh namespace with a resolv.conf in a
// temp dir and starts Watch; both end with the test.
func watchBackend(t *testing.T) (*nstest.NS, string, <-chan struct{}) {
	t.Helper()
	ns := nstest.New(t)
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), Options{NetNS: ns.Path, ResolvConf: resolv})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx)
	if err != nil {
		cancel()
		b.Close()
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		for range ch { // closed once the watch goroutines are gone
		}
		b.Close()
	})
	return ns, resolv, ch
}

// waitSignal fails the test if no signal arrives; the bound is a hang
// guard, not a latency requirement.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no change signalled", what)
	}
}

// drain drops a pending (coalesced) signal.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func TestWatchSignalsKernelChanges(t *testing.T) {
	ns, _, ch := watchBackend(t)
	steps := []struct {
		name string
		do   func() error
	}{
		{"link add", func() error {
			return ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "w0"}, PeerName: "w1"})
		}},
		{"link up", func() error {
			l, err := ns.Netlink.LinkByName("w0")
			if err != nil {
				return err
			}
			return ns.Netlink.LinkSetUp(l)
		}},
		{"address add", func() error {
			l, err := ns.Netlink.LinkByName("w0")
			if err != nil {
				return err
			}
			a, _ := netlink.ParseAddr("192.0.2.1/24")
			return ns.Netlink.AddrAdd(l, a)
		}},
		{"rule add", func() error {
			r := netlink.NewRule()
			r.Table = 100
			r.Priority = 1000
			return ns.Netlink.RuleAdd(r)
		}},
		{"link delete", func() error {
			l, err := ns.Netlink.LinkByName("w0")
			if err != nil {
				return err
			}
			return ns.Netlink.LinkDel(l)
		}},
	}
	for _, s := range steps {
		drain(ch)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		waitSignal(t, ch, s.name)
	}
}

func TestWatchSignalsResolvConfChanges(t *testing.T) {
	_, resolv, ch := watchBackend(t)
	// In place, as a bind-mounted file is rewritten.
	drain(ch)
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.54\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "rewrite in place")
	// Replaced by rename, as atomic writers do; twice, to check the watch
	// follows the new file.
	for i, content := range []string{"nameserver 192.0.2.55\n", "nameserver 192.0.2.56\n"} {
		tmp := resolv + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		drain(ch)
		if err := os.Rename(tmp, resolv); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, ch, "rename "+string(rune('1'+i)))
	}
}

func TestWatchClosesOnCancel(t *testing.T) {
	ns := nstest.New(t)
	b, err := Open(context.Background(), Options{NetNS: ns.Path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancel()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("channel not closed after cancel")
		}
	}
}

// TestWatchSignalsLLDPNeighbors: neighbours the node runtime stores change
// the reported state without a kernel event, so the watch signals them;
// another file of the directory (an enabled marker) does not count.
func TestWatchSignalsLLDPNeighbors(t *testing.T) {
	ns := nstest.New(t)
	dir := filepath.Join(t.TempDir(), "lldp")
	b, err := Open(context.Background(), Options{NetNS: ns.Path, LLDPDir: dir})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx)
	if err != nil {
		cancel()
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		for range ch {
		}
	})
	drain(ch)
	if err := b.WriteLLDPNeighbors("eth1", map[string]LLDPNeighbor{"sw": {TLVs: []any{}, Expires: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "neighbours written")

	// Which files count is decided per batch of inotify events; the
	// kernel queues a file's events within the write and close that make
	// them, so once they returned the batch can be read.
	w, err := newInotifyWatch(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	batch := func(what string) []byte {
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			t.Fatalf("%s: no inotify events (%d, %v)", what, n, err)
		}
		return buf[:n]
	}
	if err := os.WriteFile(filepath.Join(dir, "eth2.enabled"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if w.handle(batch("marker written")) {
		t.Error("a marker file counts as a change")
	}
	if err := b.WriteLLDPNeighbors("eth2", map[string]LLDPNeighbor{"sw": {TLVs: []any{}, Expires: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if !w.handle(batch("neighbours written")) {
		t.Error("a neighbour file does not count as a change")
	}
}

// TestPollWatchSignalsResolvConfChanges checks the fallback used when no
// inotify instance is left: the same changes as the inotify watch, and a
// file that disappears and comes back; each seen once, nothing without a
// change.
func TestPollWatchSignalsResolvConfChanges(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The comparison each tick of run makes, made by the test.
	w := newPollWatch(resolv, time.Hour)
	last := stampOf(w.path)
	if w.changed(&last) {
		t.Fatal("a change before any")
	}
	tests := []struct {
		name   string
		change func() error
	}{
		// File times have the kernel clock's coarse granularity: the
		// same-sized rewrite sets a later time, so it is visible however
		// soon it follows the first write.
		{"rewrite in place", func() error {
			if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.54\n"), 0o644); err != nil {
				return err
			}
			later := time.Now().Add(time.Hour)
			return os.Chtimes(resolv, later, later)
		}},
		{"replaced by rename", func() error {
			if err := os.WriteFile(resolv+".tmp", []byte("nameserver 192.0.2.55\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(resolv+".tmp", resolv)
		}},
		{"removed", func() error { return os.Remove(resolv) }},
		{"created again", func() error { return os.WriteFile(resolv, []byte("nameserver 192.0.2.56\n"), 0o644) }},
	}
	for _, tt := range tests {
		if err := tt.change(); err != nil {
			t.Fatal(err)
		}
		if !w.changed(&last) {
			t.Errorf("%s: no change seen", tt.name)
		}
		if w.changed(&last) {
			t.Errorf("%s: seen twice", tt.name)
		}
	}
	// Nothing changed: no change seen however often it looks.
	for i := range 10 {
		if w.changed(&last) {
			t.Fatalf("comparison %d without a change: changed", i)
		}
	}
}

// TestPollWatchPattern: the fallback for a pattern (the LLDP neighbour
// files) follows the directory, whose entries change when a writer
// replaces a file by rename.
func TestPollWatchPattern(t *testing.T) {
	dir := t.TempDir()
	w := newPollWatch(filepath.Join(dir, "*.json"), 5*time.Millisecond)
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { w.close(); <-done })
	time.Sleep(20 * time.Millisecond)
	drain(ch)
	if err := os.WriteFile(filepath.Join(dir, "eth1.json.tmp"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "eth1.json.tmp"), filepath.Join(dir, "eth1.json")); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "a neighbour file written by rename")
}
