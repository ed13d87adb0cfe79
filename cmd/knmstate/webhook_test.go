package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWebhookFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"empty Secret name", []string{"--kubeconfig", kc, "--secret-name", ""}, "Secret namespace and name are required"},
		{"port out of range", []string{"--kubeconfig", kc, "--port", "70000"}, "port 70000 out of range"},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(t.TempDir(), "nope")}, "kubeconfig "},
		{"no in-cluster configuration", []string{}, "in-cluster API configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "") // never in a cluster's pod
			cmd := newWebhookCmd()
			cmd.SetArgs(tc.args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}
