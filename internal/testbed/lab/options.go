package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// NoNodeRuntime as Options.Nmstatectl runs no node runtime: eth0 gets the
// address DHCP would give statically.
const NoNodeRuntime = "none"

// What kubelet mode installs (Options.Install).
const (
	InstallManifests = "manifests"
	InstallOperator  = "operator"
	InstallNone      = "none"
	// InstallPayload applies deploy/openshift as the Cluster Version
	// Operator would (with OpenShiftPlatform).
	InstallPayload = "payload"
)

// DefaultName is the name of a lab when none is given.
const DefaultName = "lab"

// MaxNodes bounds Options.Nodes: node addresses are .11 to .60 of the
// switch's IPv4 prefix, below dnsmasq's dynamic pool.
const MaxNodes = 50

// Options select and shape a lab.
type Options struct {
	// Name names the lab's namespaces; default DefaultName.
	Name string
	// Dir is the lab's directory; default DefaultDir(Name).
	Dir string
	// Nodes is the number of nodes; default 3.
	Nodes int
	// Binary is the knmstate executable run as the supervisor, the
	// handlers and the controller; default this process's executable.
	Binary string
	// APIServer is the kube-apiserver binary; default bin/kube-apiserver
	// next to Binary, else the repository's (testenv's default).
	APIServer string
	// Nmstatectl runs each node's network service (DHCP on eth0); default
	// Binary itself (`knmstate nmstatectl service`), so a lab never runs a
	// different kind of node by accident. With NoNodeRuntime eth0 gets its
	// address statically.
	Nmstatectl string
	// Heartbeat is the period of the nodes' Ready heartbeat; default
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// HandlerArgs are appended to every node's `knmstate handler` command
	// line (e.g. shorter probe timeouts for demos and end-to-end tests).
	HandlerArgs []string
	// Kubelet runs real kubelets, containerd and kube-proxy on the nodes,
	// kube-controller-manager and kube-scheduler beside the API server,
	// and knmstate as pods from deploy/knmstate with the images of `make
	// images`, pulled from a registry inside the lab.
	Kubelet bool
	// KubeBinDir holds kubelet, kube-proxy, kube-controller-manager,
	// kube-scheduler, containerd and its shim (kubelet mode); default the
	// directory of APIServer (the repository's bin/, from `make setup`).
	KubeBinDir string
	// Install says what of knmstate kubelet mode installs: InstallManifests
	// (deploy/knmstate: handler and controller, no operator; the default),
	// InstallOperator (the operator bundle and an NMState) or InstallNone.
	Install string
	// OpenShiftPlatform, when set (kubelet mode), makes the lab play
	// OpenShift: config.openshift.io's CRDs, infrastructure/cluster with
	// this platform type, a service CA, and (Install InstallPayload, the
	// default then) deploy/openshift applied in file-name order.
	OpenShiftPlatform string
	// MoreImages are more directories of images (`make images` output of
	// other versions: upgrade tests); their knmstate image is served as
	// knmstate:TAG too (State.Images["knmstate:TAG"]).
	MoreImages []string
	// Images is the directory of the OCI image layouts `make images`
	// writes (kubelet mode); default images/ next to Binary, else the
	// repository's bin/images.
	Images string

	// Kernel, when set, runs the nodes on another kernel, in a qemu guest
	// (guest mode): KernelDebian is Debian's linux-image-amd64 of the
	// kernel lane's cache. The switch, dnsmasq, the nodes, their node
	// runtimes and handlers run in the guest; etcd, the API server and the
	// controller stay on this machine.
	Kernel string
	// KernelCache is the kernel lane's cache (hack/kernel-lane/kernel.sh
	// fills it); default the repository's .cache/kernel-lane.
	KernelCache string
	// GuestMemory is the guest's memory in MiB; default DefaultGuestMemory.
	GuestMemory int
	// GuestCPUs is the guest's number of CPUs; default 2.
	GuestCPUs int

	// Backend is the nodes' network backend: "" or BackendKernel (the
	// handler drives the kernel), or BackendNetworkManager: each node runs
	// its own NetworkManager (private bus and state, internal/testbed/nmrun) that
	// leaves eth0 to the node runtime, and its handler drives it
	// (--backend networkmanager). In kubelet mode each node runs a system
	// bus and NetworkManager before containerd, NetworkManager owns eth0
	// (kubelet_nm_linux.go) and the handler pods find it; in guest mode
	// each guest node runs its NetworkManager in the guest (guest_nm_linux.go).
	Backend string

	// NoOVS asks for nodes without Open vSwitch in the default mode,
	// where the lab otherwise refuses to start when Debian's
	// openvswitch-switch is missing (kubelet-mode nodes have none either
	// way, nor guest nodes on the kernel backend).
	NoOVS bool

	// FirstBootDir holds OpenShift-style per-node NMState files
	// (NODE.yml, cluster.yml; docs/openshift.md). Each node gets a copy in
	// its own etc/nmstate/openshift (as a MachineConfig writes them) and
	// applies its file with `nmstatectl first-boot` at every boot (lab up,
	// lab reboot), after its DHCP lease and before its handler starts.
	// Default mode only.
	FirstBootDir string

	// NMOVSBuild is the directory of the NetworkManager with its OVS
	// plugin that NetworkManager nodes with Open vSwitch run (hack/nm-ovs.sh's
	// bin/nm-ovs; in a guest's agent, where its image carries it). Default:
	// next to Binary, else the repository's, resolved where lab up runs
	// (the supervisor runs in /).
	NMOVSBuild string
}

// Node backends (Options.Backend).
const (
	BackendKernel         = "kernel"
	BackendNetworkManager = "networkmanager"
)

// KernelDebian is the Kernel of guest mode: Debian's kernel under qemu.
const KernelDebian = "debian"

// DefaultGuestMemory is the guest's memory in MiB: the kernel, the
// initramfs (the binaries, unpacked), and per node a handler and a node
// runtime of about 40 MB each.
const DefaultGuestMemory = 2048

// guestSlowdown scales the lab's own waits in guest mode: Go code runs
// about 18 times slower under qemu's TCG than on this machine.
const guestSlowdown = 20

// scale stretches a wait for the mode the lab runs in.
func (o Options) scale(d time.Duration) time.Duration {
	if o.Kernel != "" {
		return d * guestSlowdown
	}
	return d
}

// DefaultDir is the directory of the lab named name.
func DefaultDir(name string) string {
	return filepath.Join(os.TempDir(), "knmstate-lab-"+name)
}

// withDefaults fills defaults and validates; Dir becomes absolute, since
// processes find the lab's leftovers by it.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	var errs []error
	if err := labnet.ValidateName(o.Name); err != nil {
		errs = append(errs, fmt.Errorf("name: %w", err))
	}
	if o.Dir == "" {
		o.Dir = DefaultDir(o.Name)
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		errs = append(errs, fmt.Errorf("dir: %w", err))
	}
	o.Dir = abs
	if o.Dir == "/" {
		errs = append(errs, errors.New("dir: / cannot be a lab directory"))
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Heartbeat < 0 {
		errs = append(errs, fmt.Errorf("heartbeat: %v is negative", o.Heartbeat))
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	switch {
	case o.Backend == "" || o.Backend == BackendKernel:
	case o.Backend != BackendNetworkManager:
		errs = append(errs, fmt.Errorf("backend: %q is not one of kernel, networkmanager", o.Backend))
	}
	if o.Nodes < 1 || o.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("nodes: %d is out of range 1..%d", o.Nodes, MaxNodes))
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			errs = append(errs, fmt.Errorf("binary: %w", err))
		}
		o.Binary = exe
	}
	if o.Nmstatectl == "" {
		o.Nmstatectl = o.Binary
	}
	if o.APIServer == "" {
		next := filepath.Join(filepath.Dir(o.Binary), "kube-apiserver")
		if _, err := os.Stat(next); err == nil {
			o.APIServer = next
		} else if root, err := testenv.FindRepoRoot(); err == nil {
			// Resolved here, from the caller's working directory: the
			// supervisor runs in /.
			o.APIServer = filepath.Join(root, "bin", "kube-apiserver")
		}
	}
	if o.Backend == BackendNetworkManager && !o.NoOVS && !o.Kubelet && o.NMOVSBuild == "" {
		next := filepath.Join(filepath.Dir(o.Binary), filepath.Base(nmrun.BuildDir))
		if _, err := nmrun.BuildAt(next); err == nil {
			o.NMOVSBuild = next
		} else if b, err := nmrun.OVSBuild(); err == nil {
			o.NMOVSBuild = filepath.Dir(b.NetworkManager)
		}
		// Else the supervisor says what is missing (ovsAvailable).
	}
	if o.Kernel != "" {
		if o.Kernel != KernelDebian {
			errs = append(errs, fmt.Errorf("kernel: %q is not a kernel the lab knows (only %q)", o.Kernel, KernelDebian))
		}
		if o.Kubelet {
			errs = append(errs, errors.New("kernel: guest mode and kubelet mode do not combine"))
		}
		if o.KernelCache == "" {
			if root, err := testenv.FindRepoRoot(); err == nil {
				o.KernelCache = filepath.Join(root, ".cache", "kernel-lane")
			} else {
				errs = append(errs, fmt.Errorf("kernel-cache: not given and no repository found: %w", err))
			}
		}
		if o.KernelCache != "" {
			abs, err := filepath.Abs(o.KernelCache)
			if err != nil {
				errs = append(errs, fmt.Errorf("kernel-cache: %w", err))
			}
			o.KernelCache = abs
		}
		if o.GuestMemory == 0 {
			o.GuestMemory = DefaultGuestMemory
		}
		if o.GuestCPUs == 0 {
			o.GuestCPUs = 2
		}
		if o.GuestMemory < 256 || o.GuestCPUs < 1 {
			errs = append(errs, fmt.Errorf("guest: %d MiB and %d CPUs is too small", o.GuestMemory, o.GuestCPUs))
		}
	}
	if o.Install == "" {
		o.Install = InstallManifests
	}
	if o.OpenShiftPlatform != "" {
		if !o.Kubelet {
			errs = append(errs, fmt.Errorf("openshift-platform: needs kubelet mode (--kubelet)"))
		}
		switch o.Install {
		case InstallManifests, InstallPayload:
			o.Install = InstallPayload
		case InstallNone:
		default:
			errs = append(errs, fmt.Errorf("install: %s with --openshift-platform: the payload (deploy/openshift) or none", o.Install))
		}
	}
	switch o.Install {
	case InstallManifests, InstallOperator, InstallNone:
	case InstallPayload:
		if o.OpenShiftPlatform == "" {
			errs = append(errs, fmt.Errorf("install: %s needs --openshift-platform", InstallPayload))
		}
	default:
		errs = append(errs, fmt.Errorf("install: %q is not one of %s, %s, %s, %s", o.Install, InstallManifests, InstallOperator, InstallPayload, InstallNone))
	}
	if o.FirstBootDir != "" {
		if o.Kubelet || o.Kernel != "" || o.Backend == BackendNetworkManager {
			errs = append(errs, errors.New("first-boot-dir: only in the default mode on the kernel backend"))
		}
		abs, err := filepath.Abs(o.FirstBootDir)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("first-boot-dir: %w", err))
		}
		o.FirstBootDir = abs
	}
	if o.Install != InstallManifests && !o.Kubelet && o.OpenShiftPlatform == "" {
		errs = append(errs, fmt.Errorf("install: %s needs kubelet mode (--kubelet)", o.Install))
	}
	if o.Kubelet {
		if o.KubeBinDir == "" && o.APIServer != "" {
			o.KubeBinDir = filepath.Dir(o.APIServer)
		}
		if o.Images == "" {
			next := filepath.Join(filepath.Dir(o.Binary), "images")
			if _, err := os.Stat(next); err == nil {
				o.Images = next
			} else if root, err := testenv.FindRepoRoot(); err == nil {
				o.Images = filepath.Join(root, "bin", "images")
			}
		}
		for i, dir := range o.MoreImages {
			abs, err := filepath.Abs(dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("more-images: %w", err))
			}
			o.MoreImages[i] = abs
		}
		for name, dir := range map[string]string{"kube-bin-dir": o.KubeBinDir, "images": o.Images} {
			if dir == "" {
				continue
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			if name == "images" {
				o.Images = abs
			} else {
				o.KubeBinDir = abs
			}
		}
	}
	return o, errors.Join(errs...)
}

// NodeName is the name of the i-th node (0-based): node01, node02, ...
func NodeName(i int) string { return fmt.Sprintf("node%02d", i+1) }

// ResolveDir returns the directory of a lab selected by --dir or --name
// (dir wins), absolute.
func ResolveDir(name, dir string) (string, error) {
	if dir == "" {
		if name == "" {
			name = DefaultName
		}
		if err := labnet.ValidateName(name); err != nil {
			return "", fmt.Errorf("name: %w", err)
		}
		dir = DefaultDir(name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("dir: %w", err)
	}
	return abs, nil
}
