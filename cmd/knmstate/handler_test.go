package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/scrape"
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

func TestMetricsFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want scrape.Options
	}{
		{"disabled by default, secure once enabled", nil, scrape.Options{BindAddress: "0", Secure: true}},
		{"enabled", []string{"--metrics-bind-address=:9894"}, scrape.Options{BindAddress: ":9894", Secure: true}},
		{"plain, own certificate", []string{"--metrics-bind-address=127.0.0.1:9894", "--metrics-secure=false", "--metrics-cert-dir=/certs"},
			scrape.Options{BindAddress: "127.0.0.1:9894", CertDir: "/certs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &handlerOptions{}
			cmd := newHandlerCmdFor(o)
			if err := cmd.Flags().Parse(append([]string{"--node", "n1", "--kubeconfig", kc}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			opts, err := o.handlerOptions(false)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Metrics != tc.want {
				t.Errorf("handler metrics %+v, want %+v", opts.Metrics, tc.want)
			}
			ctrl := newControllerCmd()
			if err := ctrl.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			f := ctrl.Flags()
			got := scrape.Options{BindAddress: f.Lookup("metrics-bind-address").Value.String(), CertDir: f.Lookup("metrics-cert-dir").Value.String()}
			got.Secure = f.Lookup("metrics-secure").Value.String() == "true"
			if got != tc.want {
				t.Errorf("controller metrics flags %+v, want %+v", got, tc.want)
			}
		})
	}
}
