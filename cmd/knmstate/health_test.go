package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckReadyFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "healthy")
	now := time.Now()
	if err := checkReadyFile(f, 0, now); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("missing file: %v, want not ready", err)
	}
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-10 * time.Minute)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		maxAge time.Duration
		ok     bool
	}{{0, true}, {time.Hour, true}, {5 * time.Minute, false}} {
		err := checkReadyFile(f, tc.maxAge, now)
		if (err == nil) != tc.ok {
			t.Errorf("max age %v: %v, want ok=%v", tc.maxAge, err, tc.ok)
		}
	}
}
