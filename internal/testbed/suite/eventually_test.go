package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	errNotYet := errors.New("not yet")
	tests := []struct {
		name string
		// okAt is the call of check that succeeds (0: none).
		okAt    int
		cancel  bool
		wantErr []string // substrings; none: nil
	}{
		{name: "succeeds at once", okAt: 1},
		{name: "succeeds later", okAt: 3},
		{name: "times out with the last error", wantErr: []string{"still not true after 20ms"}},
		{name: "context ended", cancel: true, wantErr: []string{"context canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			calls := 0
			err := Until(ctx, 20*time.Millisecond, time.Millisecond, func() error {
				calls++
				if calls == tt.okAt {
					return nil
				}
				if tt.cancel {
					cancel()
				}
				return fmt.Errorf("%w %d", errNotYet, calls)
			})
			if len(tt.wantErr) == 0 {
				if err != nil || calls != tt.okAt {
					t.Fatalf("Until = %v after %d calls, want nil after %d", err, calls, tt.okAt)
				}
				return
			}
			if !errors.Is(err, errNotYet) {
				t.Fatalf("Until = %v, want check's error wrapped", err)
			}
			// The last call's error, not the first's.
			for _, w := range append(tt.wantErr, fmt.Sprintf("not yet %d", calls)) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Until = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestEventuallyInCleanup: a cleanup's Eventually waits for its
// condition, though the test's context has ended.
func TestEventuallyInCleanup(t *testing.T) {
	calls := 0
	t.Run("test", func(t *testing.T) {
		t.Cleanup(func() {
			Eventually(t, time.Minute, "the third call", func() error {
				if calls++; calls < 3 {
					return errors.New("not yet")
				}
				return nil
			})
		})
	})
	if calls != 3 {
		t.Errorf("the cleanup's Eventually checked %d times, want 3", calls)
	}
}

func TestCond(t *testing.T) {
	ok := false
	check := Cond(func() bool { return ok }, func() string { return "not ok" })
	if err := check(); err == nil || err.Error() != "not ok" {
		t.Errorf("false condition: %v, want the description", err)
	}
	ok = true
	if err := check(); err != nil {
		t.Errorf("true condition: %v, want nil", err)
	}
}

// TestKubectlError: a failing kubectl's error names the command and holds
// what kubectl wrote to its standard error.
func TestKubectlError(t *testing.T) {
	k := Kubectl{Kubeconfig: t.TempDir() + "/missing-kubeconfig"}
	_, err := k.Try(t, "", "get", "nodes")
	if err == nil {
		t.Fatal("kubectl with a missing kubeconfig succeeded")
	}
	for _, w := range []string{"kubectl get nodes", "missing-kubeconfig"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
