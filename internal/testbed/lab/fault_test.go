package lab

import (
	"testing"
	"time"
)

func TestFaultValidate(t *testing.T) {
	tests := []struct {
		name    string
		f       Fault
		wantErr string
	}{
		{"api server", Fault{Component: FaultAPIServer, For: Duration(30 * time.Second)}, ""},
		{"etcd back at once", Fault{Component: FaultEtcd}, ""},
		{"leader", Fault{Component: FaultController}, ""},
		{"handler", Fault{Component: FaultHandler, Node: "node02"}, ""},
		{"node", Fault{Component: FaultNode, Node: "node02", For: Duration(time.Minute)}, ""},
		{"partition", Fault{Component: FaultPartition, Node: "node02", For: Duration(time.Second)}, ""},
		{"control plane with a node", Fault{Component: FaultEtcd, Node: "node02"}, "lab kill etcd: takes no node"},
		{"handler without a node", Fault{Component: FaultHandler}, "lab kill: which node?"},
		{"partition without --for", Fault{Component: FaultPartition, Node: "node02"}, "lab partition: --for is needed (how long the node stays cut off)"},
		{"negative --for", Fault{Component: FaultNode, Node: "node02", For: Duration(-time.Second)}, "lab kill: negative --for -1s"},
		{"unknown", Fault{Component: "kubelet"}, `lab kill: no component "kubelet" (one of apiserver, etcd, controller, handler NODE, node NODE)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
