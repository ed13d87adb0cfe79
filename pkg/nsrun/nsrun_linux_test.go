package nsrun

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

func TestFile(t *testing.T) {
	for in, want := range map[string]string{
		"knmt-1":            "/run/netns/knmt-1",
		"/proc/1/ns/net":    "/proc/1/ns/net",
		"./relative/ns/net": "./relative/ns/net",
	} {
		if got := File(in); got != want {
			t.Errorf("File(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCreateDoRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns")
	created, err := Create(path)
	t.Cleanup(func() {
		if created {
			if err := Remove(path); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	own, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if ns.Equal(own) {
		t.Fatal("Create gave the process's own namespace")
	}
	var inside netns.NsHandle
	err = DoPath(path, func() error {
		var err error
		inside, err = netns.Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(ns) {
		t.Error("f did not run in the namespace")
	}
	// The caller's thread never moved.
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(own) {
		t.Error("the calling thread changed namespace")
	}
	if err := Do(ns, func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic in f gave %v, want an error naming it", err)
	}
	want := errors.New("f failed")
	if err := Do(ns, func() error { return want }); !errors.Is(err, want) {
		t.Errorf("Do = %v, want f's error", err)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	created = false
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace file still there after Remove: %v", err)
	}
	if err := Remove(path); err != nil {
		t.Errorf("Remove of what is gone: %v", err)
	}
}

func TestDoPathOwnNamespace(t *testing.T) {
	ran := false
	if err := DoPath("", func() error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("DoPath(\"\") ran=%v err=%v", ran, err)
	}
	if err := DoPath("/nonexistent/ns", func() error { return nil }); err == nil {
		t.Error("DoPath of a missing namespace succeeded")
	}
}

// The thread Do used must be back in its original namespace afterwards,
// even when f fails or panics; checked on one locked thread so the result
// does not depend on which thread the scheduler picks.
func TestDoSwitchesTheThreadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns")
	created, err := Create(path)
	t.Cleanup(func() {
		if created {
			Remove(path)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"ok", func() error { return nil }},
		{"error", func() error { return errors.New("fails") }},
		{"panic", func() error { panic("boom") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				// Locked twice: doLocked undoes one lock on success (as Do's
				// goroutine expects), the other keeps this goroutine on the
				// same thread for the check below.
				runtime.LockOSThread()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				before, err := netns.Get()
				if err != nil {
					done <- err
					return
				}
				defer before.Close()
				_ = doLocked(ns, tc.f)
				after, err := netns.Get()
				if err != nil {
					done <- err
					return
				}
				defer after.Close()
				if !after.Equal(before) {
					done <- errors.New("thread left in namespace " + after.String())
					return
				}
				done <- nil
			}()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
