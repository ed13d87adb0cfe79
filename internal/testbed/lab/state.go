package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files of a lab directory.
const (
	pidFile        = "lab.pid"
	stateFile      = "state.json"
	logFile        = "lab.log"
	kubeconfigFile = "kubeconfig"
)

// Phases of a lab.
const (
	PhaseStarting = "Starting"
	PhaseReady    = "Ready"
	PhaseFailed   = "Failed"
	PhaseStopping = "Stopping"
)

// State is what the supervisor publishes in DIR/state.json: written
// atomically at every step, read by Up, Status, Exec and Down.
type State struct {
	Name  string `json:"name"`
	Dir   string `json:"dir"`
	PID   int    `json:"pid"`
	Phase string `json:"phase"`
	// Error says why the lab failed (Phase Failed).
	Error string `json:"error,omitempty"`
	// Notes are things a user should know (a component not available).
	Notes []string `json:"notes,omitempty"`

	StartedAt time.Time `json:"startedAt"`
	// ReadyAfter is the time from the supervisor's start to Ready.
	ReadyAfter Duration `json:"readyAfter,omitempty"`
	// Steps are the start-up steps with their durations, for the report.
	Steps []Step `json:"steps,omitempty"`

	// Kubeconfig points at the forwarder (for kubectl on this machine).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Forwarder is the forwarder's loopback address.
	Forwarder string `json:"forwarder,omitempty"`
	// APIServer is the API server's URL inside the switch namespace.
	APIServer string `json:"apiServer,omitempty"`
	// AuditLog is the API server's audit log of writes (JSON lines: user,
	// user agent, verb, object).
	AuditLog string `json:"auditLog,omitempty"`
	// SwitchNS is the switch namespace's name under /run/netns.
	SwitchNS string `json:"switchNetns,omitempty"`
	// SwitchDir holds dnsmasq's files and the nodes' resolv.conf files.
	SwitchDir string `json:"switchDir,omitempty"`
	// ControllerMetrics is the controller's metrics address (plain HTTP):
	// on the switch namespace's loopback in the default mode, on this
	// machine's loopback in guest mode (no switch namespace here).
	ControllerMetrics string `json:"controllerMetrics,omitempty"`

	// Kubelet: nodes run kubelets, containerd and kube-proxy, and
	// knmstate runs as pods (kubelet mode).
	Kubelet bool `json:"kubelet,omitempty"`
	// CgroupPath is the lab's cgroup (every node's below it) in kubelet
	// mode, for Down after a supervisor that was killed.
	CgroupPath string `json:"cgroupPath,omitempty"`
	// OpenShiftPlatform is the platform type the lab plays OpenShift with
	// (kubelet mode, --openshift-platform).
	OpenShiftPlatform string `json:"openshiftPlatform,omitempty"`
	// Images are the images the lab registry serves, by name, as
	// references by digest (kubelet mode).
	Images map[string]string `json:"images,omitempty"`

	// Guest is set in guest mode: the qemu guest the nodes run in.
	Guest *GuestState `json:"guest,omitempty"`

	Nodes     []NodeState `json:"nodes,omitempty"`
	Processes []Process   `json:"processes,omitempty"`
}

// GuestState is the qemu guest of a lab in guest mode.
type GuestState struct {
	// Kernel is the guest kernel's release.
	Kernel string `json:"kernel"`
	// Agent is the guest agent's address on this machine's loopback (a
	// port qemu forwards): status, start and exec.
	Agent string `json:"agent"`
	// TokenFile holds the agent's bearer token (readable by root only).
	TokenFile string `json:"tokenFile"`
	// Console is the guest's serial console log (boot, /init, the agent).
	Console string `json:"console"`
	// MemoryMiB and CPUs are the guest's size.
	MemoryMiB int `json:"memoryMiB"`
	CPUs      int `json:"cpus"`
	// APIServer is the API server as the guest dials it (qemu maps
	// 10.0.2.2 to this machine's loopback).
	APIServer string `json:"apiServer"`
}

// NodeState is one node of the lab.
type NodeState struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	NetNS string `json:"netns"`
	// MountNS is a /proc/PID/fd path of the supervisor (valid while it runs).
	MountNS    string   `json:"mountNS"`
	UTSNS      string   `json:"utsNS"`
	ResolvConf string   `json:"resolvConf"`
	Address    string   `json:"address"`
	NICs       []string `json:"nics"`
	Kubeconfig string   `json:"kubeconfig"`
	// CgroupRoot is the kubelet's cgroup root (kubelet mode).
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// RuntimeStateDir is the node runtime's state directory (`nmstatectl
	// service --state-dir`; `nmstatectl apply` with it hands the runtime
	// dynamic settings).
	RuntimeStateDir string `json:"runtimeStateDir,omitempty"`
	// OVSDB is the socket of the node's own Open vSwitch database
	// ("unix:PATH" in the node's lab directory; "" = no OVS on the node).
	OVSDB string `json:"ovsdb,omitempty"`
	// Kernel is the node's kernel release when it is not this machine's
	// (guest mode).
	Kernel string `json:"kernel,omitempty"`
	// NetworkManagerBus is the D-Bus address of the node's NetworkManager
	// (Options.Backend networkmanager): `nmcli` with
	// DBUS_SYSTEM_BUS_ADDRESS set to it talks to that node's instance.
	NetworkManagerBus string `json:"networkManagerBus,omitempty"`
	// NetworkManagerResolvConf is the resolv.conf that node's
	// NetworkManager renders (in its run directory; the node's own
	// /etc/resolv.conf stays the node runtime's, which serves eth0).
	NetworkManagerResolvConf string `json:"networkManagerResolvConf,omitempty"`
}

// Process is one process the supervisor runs.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Where is "switch netns", "host", or the node's name.
	Where string `json:"where"`
	// Status is "running", "restarting", "exited: ..." or "unavailable: ...".
	Status   string `json:"status"`
	Restarts int    `json:"restarts,omitempty"`
	Log      string `json:"log,omitempty"`
	// Guest: the process runs in the lab's qemu guest (PID and Log are
	// the guest's).
	Guest bool `json:"guest,omitempty"`
}

// Step is one timed start-up step.
type Step struct {
	Name     string   `json:"name"`
	Duration Duration `json:"duration"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// ReadState reads the state file of the lab in dir.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no lab in %s: %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading lab state: %w", err)
	}
	st := &State{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("lab state %s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// writeState replaces the state file atomically.
func writeState(st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding lab state: %w", err)
	}
	tmp := filepath.Join(st.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(st.Dir, stateFile)); err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	return nil
}

// Node returns the node named name.
func (st *State) Node(name string) (*NodeState, error) {
	for i := range st.Nodes {
		if st.Nodes[i].Name == name {
			return &st.Nodes[i], nil
		}
	}
	names := make([]string, len(st.Nodes))
	for i, n := range st.Nodes {
		names[i] = n.Name
	}
	return nil, fmt.Errorf("lab %s has no node %q (nodes: %v)", st.Name, name, names)
}

// Backend names the nodes' network backend: networkmanager when they run
// NetworkManager, else kernel.
func (s *State) Backend() string {
	for _, n := range s.Nodes {
		if n.NetworkManagerBus != "" {
			return BackendNetworkManager
		}
	}
	return BackendKernel
}
