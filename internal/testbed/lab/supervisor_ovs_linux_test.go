package lab

import (
	"log/slog"
	"strings"
	"testing"
)

// TestOVSAvailable: without Open vSwitch a default-mode lab refuses to
// start unless asked for one without it; the other modes have none.
func TestOVSAvailable(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		noOVS   bool // PATH without Open vSwitch's programs
		want    bool
		wantErr string
		// emptyBuild gives an NMOVSBuild directory with no build in it.
		emptyBuild bool
	}{
		{name: "default mode", opts: Options{}, want: true},
		{name: "default mode without OVS", opts: Options{}, noOVS: true, wantErr: "--no-ovs"},
		{name: "asked for none", opts: Options{NoOVS: true}, want: false},
		{name: "asked for none, none there", opts: Options{NoOVS: true}, noOVS: true, want: false},
		{name: "kubelet mode", opts: Options{Kubelet: true}, noOVS: true, want: false},
		{name: "guest mode", opts: Options{Kernel: KernelDebian}, noOVS: true, want: false},
		{name: "guest mode, NetworkManager nodes without the OVS build", opts: Options{Kernel: KernelDebian, Backend: BackendNetworkManager}, noOVS: true, want: false},
		// NetworkManager nodes run OVS through NetworkManager's OVS plugin
		// (make setup's bin/nm-ovs, found below the repository).
		{name: "NetworkManager nodes", opts: Options{Backend: BackendNetworkManager}, want: true},
		{name: "NetworkManager nodes without OVS", opts: Options{Backend: BackendNetworkManager}, noOVS: true, wantErr: "--no-ovs"},
		{name: "NetworkManager nodes without the OVS build", opts: Options{Backend: BackendNetworkManager}, emptyBuild: true, wantErr: "--no-ovs"},
		{name: "NetworkManager nodes, asked for none", opts: Options{Backend: BackendNetworkManager, NoOVS: true}, emptyBuild: true, want: false},
		{name: "kubelet-mode NetworkManager nodes", opts: Options{Kubelet: true, Backend: BackendNetworkManager}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noOVS {
				t.Setenv("PATH", t.TempDir())
			}
			if tt.emptyBuild {
				tt.opts.NMOVSBuild = t.TempDir()
			}
			s := &supervisor{opts: tt.opts, log: slog.New(slog.DiscardHandler)}
			got, err := s.ovsAvailable()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ovsAvailable() error = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ovsAvailable(): %v", err)
			}
			if got != tt.want {
				t.Errorf("ovsAvailable() = %v, want %v", got, tt.want)
			}
		})
	}
}
