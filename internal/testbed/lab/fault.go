package lab

import (
	"fmt"
	"time"
)

// The components lab kill stops (Fault.Component), and Partition.
const (
	FaultAPIServer  = "apiserver"
	FaultEtcd       = "etcd"
	FaultController = "controller"
	FaultHandler    = "handler"
	FaultNode       = "node"
	// FaultPartition drops a node's traffic to the API server (lab
	// partition).
	FaultPartition = "partition"
)

// Fault is one fault injected into a running lab.
type Fault struct {
	Component string `json:"component"`
	// Node is the node of handler, node and partition.
	Node string `json:"node,omitempty"`
	// For is how long the component stays down (the partition lasts);
	// zero: it comes back as its supervisor brings it back (at once for
	// the control plane, after the back-off of the lab or the kubelet for
	// the others). A partition needs it.
	For Duration `json:"for,omitempty"`
}

// Validate checks the fault's fields against each other.
func (f Fault) Validate() error {
	switch f.Component {
	case FaultAPIServer, FaultEtcd, FaultController:
		if f.Node != "" {
			return fmt.Errorf("lab kill %s: takes no node", f.Component)
		}
	case FaultHandler, FaultNode, FaultPartition:
		if f.Node == "" {
			return fmt.Errorf("lab %s: which node?", f.verb())
		}
	default:
		return fmt.Errorf("lab kill: no component %q (one of apiserver, etcd, controller, handler NODE, node NODE)", f.Component)
	}
	if f.For < 0 {
		return fmt.Errorf("lab %s: negative --for %v", f.verb(), time.Duration(f.For))
	}
	if f.Component == FaultPartition && f.For == 0 {
		return fmt.Errorf("lab partition: --for is needed (how long the node stays cut off)")
	}
	return nil
}

func (f Fault) verb() string {
	if f.Component == FaultPartition {
		return "partition"
	}
	return "kill"
}

// FaultResult is what a fault did.
type FaultResult struct {
	Fault
	// At is when the component died (the partition began).
	At time.Time `json:"at"`
	// Target names what was killed: processes, a pod, the leader.
	Target string `json:"target"`
	// PIDs are the processes killed.
	PIDs []int `json:"pids,omitempty"`
}
