package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestHandlerFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantErr   string
		wantDial  string
		wantNetNS string
	}{
		{name: "node required", args: []string{"--kubeconfig", kc}, wantErr: "--node is required"},
		{name: "dial defaults to the node namespace", args: []string{"--node", "n1", "--kubeconfig", kc, "--netns", "node1"}, wantDial: "node1", wantNetNS: "node1"},
		{name: "dial from elsewhere", args: []string{"--node", "n1", "--kubeconfig", kc, "--netns", "node1", "--dial-netns", "/proc/self/ns/net"}, wantDial: "/proc/self/ns/net", wantNetNS: "node1"},
		{name: "explicitly no switching", args: []string{"--node", "n1", "--kubeconfig", kc, "--netns", "node1", "--dial-netns", ""}, wantDial: "", wantNetNS: "node1"},
		{name: "bad node name", args: []string{"--node", "N_1", "--kubeconfig", kc}, wantErr: `node: "N_1" is not a valid node name`},
		{name: "missing kubeconfig", args: []string{"--node", "n1", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, wantErr: "kubeconfig "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := &handlerOptions{}
			cmd := newHandlerCmdFor(o)
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			opts, err := o.handlerOptions(cmd.Flags().Changed("dial-netns"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.DialNetNS != tc.wantDial || opts.NetNS != tc.wantNetNS {
				t.Errorf("netns %q, dial %q; want %q, %q", opts.NetNS, opts.DialNetNS, tc.wantNetNS, tc.wantDial)
			}
			if opts.Resync != 10*time.Minute || opts.Debounce != 200*time.Millisecond {
				t.Errorf("resync %v, debounce %v: defaults not applied", opts.Resync, opts.Debounce)
			}
		})
	}
}
