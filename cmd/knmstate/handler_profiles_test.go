package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHandlerProfileFlags: NetworkManager profiles persist by default, as
// upstream's; --memory-only-profiles opts into the ephemeral mode;
// --persist-profiles, the former opt-in, is accepted and changes nothing.
func TestHandlerProfileFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		memoryOnly bool
	}{
		{nil, false},
		{[]string{"--memory-only-profiles"}, true},
		{[]string{"--persist-profiles"}, false},
	} {
		o := &handlerOptions{}
		cmd := newHandlerCmdFor(o)
		if err := cmd.Flags().Parse(append([]string{"--node", "n1", "--kubeconfig", kc}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		opts, err := o.handlerOptions(false)
		if err != nil {
			t.Fatal(err)
		}
		if opts.MemoryOnlyProfiles != tc.memoryOnly {
			t.Errorf("%v: MemoryOnlyProfiles %v, want %v", tc.args, opts.MemoryOnlyProfiles, tc.memoryOnly)
		}
	}
}
