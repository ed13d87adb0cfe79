package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/deploy"
	"github.com/knmstate/knmstate/deploy/rbac"
	"github.com/knmstate/knmstate/internal/image"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/testbed/lab/nodeinit"
	"github.com/knmstate/knmstate/internal/testbed/lab/registry"
	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// kubeBinaries are the programs kubelet mode runs, resolved and checked
// before anything starts.
type kubeBinaries struct {
	Kubelet, KubeProxy, ControllerManager, Scheduler string
	Containerd, Shim, Runc                           string
	// PathDirs are put first on the node daemons' PATH (containerd finds
	// its shim and runc there, the kubelet mount and nft).
	PathDirs []string
}

// resolveKubeBinaries finds the kubelet-mode programs: the Kubernetes
// components and containerd in dir (bin/ of the repository, where `make
// setup` builds them), runc, the CNI plugins and nft from Debian's
// packages. The error names everything missing and what installs it.
func resolveKubeBinaries(dir string) (kubeBinaries, error) {
	b := kubeBinaries{
		Kubelet:           filepath.Join(dir, "kubelet"),
		KubeProxy:         filepath.Join(dir, "kube-proxy"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Scheduler:         filepath.Join(dir, "kube-scheduler"),
		Containerd:        filepath.Join(dir, "containerd"),
		Shim:              filepath.Join(dir, "containerd-shim-runc-v2"),
		Runc:              "/usr/sbin/runc",
		PathDirs:          []string{dir},
	}
	var missing []string
	for _, p := range []string{b.Kubelet, b.KubeProxy, b.ControllerManager, b.Scheduler, b.Containerd, b.Shim} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p+" (make setup)")
		}
	}
	for _, p := range []string{b.Runc, "/usr/sbin/nft", filepath.Join(cniBinDir, "bridge"), filepath.Join(cniBinDir, "host-local")} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p+" (Debian's runc, nftables, containernetworking-plugins: make setup)")
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("kubelet mode needs %s", strings.Join(missing, ", "))
	}
	return b, nil
}

// daemonPath is the PATH of a node's daemons.
func (b kubeBinaries) daemonPath() string {
	return "PATH=" + strings.Join(append(slices.Clone(b.PathDirs), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"), ":")
}

// kubeletLab is the kubelet-mode part of a running lab.
type kubeletLab struct {
	s      *supervisor
	bins   kubeBinaries
	env    *testenv.Env
	sw     *labnet.Switch
	nodes  []NodeState
	images map[string]string // image name -> reference by digest

	hierarchies []cgroupHierarchy
	cgroupBase  string
	madeCgroups []string

	initCtx    context.Context
	initCancel context.CancelFunc
	initWG     sync.WaitGroup
	spawners   []*spawner
}

// namespace holds knmstate's components.
func (k *kubeletLab) namespace() string {
	if k.s.opts.OpenShiftPlatform != "" {
		return manifest.OpenShiftNamespace
	}
	return componentNamespace
}

// cgroupPath is the lab's own cgroup (all its nodes below it).
func (k *kubeletLab) cgroupPath() string {
	return nodeCgroupRoot(k.cgroupBase, k.s.opts.Name, "")
}

// prepareNode writes one node's configuration, credentials and init spec
// and creates its cgroup root.
func (k *kubeletLab) prepareNode(n *NodeState) (*nodeinit.Spec, error) {
	o := k.s.opts
	dir := filepath.Join(o.Dir, "nodes", n.Name)
	kn := kubeletNode{
		Name:        n.Name,
		Address:     netip.MustParseAddr(n.Address),
		Dir:         dir,
		CgroupRoot:  nodeCgroupRoot(k.cgroupBase, o.Name, n.Name),
		CAFile:      k.env.PKIFile("ca.crt"),
		PauseImage:  k.images["pause"],
		Snapshotter: snapshotterFor(dir),
	}
	n.CgroupRoot = kn.CgroupRoot
	made, err := createCgroup(k.hierarchies, kn.CgroupRoot)
	k.madeCgroups = append(k.madeCgroups, made...)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	for _, d := range []string{"var/lib", "var/log", "var/k8s_nmstate", "var/tmp", "sysctl", "etc/containerd", "etc/kubernetes", "etc/cni/net.d",
		filepath.Join("etc/containerd/certs.d", registryHost())} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "var/tmp"), 0o1777); err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	// /var/run and /var/lock lead to the node's /run, as on a machine.
	for link, target := range map[string]string{"var/run": "../run", "var/lock": "../run/lock"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	files := map[string]string{
		kn.containerdConfigPath(): kn.containerdConfig(),
		filepath.Join(kn.registryHostsDir(), registryHost(), "hosts.toml"): registryHostsConfig(),
		kn.kubeletConfigPath(): kn.kubeletConfig(),
		kn.proxyConfigPath():   kn.kubeProxyConfig(),
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	// The kubelet is system:node:NAME in system:nodes (the Node authorizer
	// and NodeRestriction know it by that); kube-proxy the user the
	// bootstrap RBAC grants node-proxier to.
	for path, user := range map[string][2]string{
		kn.kubeletKubeconfig(): {"system:node:" + n.Name, "system:nodes"},
		kn.proxyKubeconfig():   {"system:kube-proxy", ""},
	} {
		var groups []string
		if user[1] != "" {
			groups = []string{user[1]}
		}
		cfg, err := k.env.UserConfig(user[0], groups...)
		if err != nil {
			return nil, err
		}
		// Straight to the API server's address through the node's NIC.
		cfg.Dial = nil
		if err := testenv.WriteKubeconfig(path, cfg); err != nil {
			return nil, err
		}
	}
	spec := &nodeinit.Spec{
		Mounts: []nodeinit.Mount{
			{Type: "proc", Target: "/proc"},
			{Type: "tmpfs", Target: "/run", Data: "mode=755"},
			// The node's whole /var is its own (lib, log, tmp, and the
			// handler DaemonSet's /var/k8s_nmstate): a hostPath or a mount
			// point below the machine's /var would be made on the machine.
			{Source: filepath.Join(dir, "var"), Target: "/var"},
		},
		StatusFile: filepath.Join(dir, "init.json"),
		StopGrace:  nodeinit.Duration(10 * time.Second),
	}
	keys := make([]string, 0, len(kernelDefaults))
	for key := range kernelDefaults {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		src := filepath.Join(dir, "sysctl", strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(src, []byte(kernelDefaults[key]+"\n"), 0o444); err != nil {
			return nil, err
		}
		spec.Mounts = append(spec.Mounts, nodeinit.Mount{Source: src, Target: "/proc/sys/" + key, ReadOnly: true})
	}
	env := []string{k.bins.daemonPath(), "HOME=/root"}
	if o.eth0ByNetworkManager() {
		mounts, daemons, err := k.networkManagerNode(n, dir, env)
		if err != nil {
			return nil, err
		}
		spec.Mounts = append(spec.Mounts, mounts...)
		spec.Daemons = daemons
	}
	spec.Daemons = append(spec.Daemons, []nodeinit.Daemon{
		{Name: "containerd", Path: k.bins.Containerd, Args: []string{"--config=" + kn.containerdConfigPath()},
			Env: env, Log: filepath.Join(dir, "containerd.log"), Ready: containerdSocket},
		{Name: "kubelet", Path: k.bins.Kubelet, Args: kn.kubeletArgs(), Env: env, Log: filepath.Join(dir, "kubelet.log")},
		{Name: "kube-proxy", Path: k.bins.KubeProxy, Args: []string{"--config=" + kn.proxyConfigPath()},
			Env: env, Log: filepath.Join(dir, "kube-proxy.log")},
	}...)
	return spec, nil
}

// snapshotterFor is overlayfs unless the node's directory lies on an
// overlay filesystem itself (a container's), where overlay mounts cannot
// stack: then containerd copies layers (native).
func snapshotterFor(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(dir), &st); err == nil && st.Type == unix.OVERLAYFS_SUPER_MAGIC {
		return "native"
	}
	return "overlayfs"
}

// startNodeInit starts the node's init (PID 1 of a new PID namespace,
// inside the node's network, mount and UTS namespaces).
func (k *kubeletLab) startNodeInit(n *NodeState, spec *nodeinit.Spec) error {
	dir := filepath.Join(k.s.opts.Dir, "nodes", n.Name)
	specPath := filepath.Join(dir, "init-spec.json")
	if err := nodeinit.WriteSpec(specPath, spec); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	sp, err := newNodeSpawner(labnetPath(n.NetNS), n.MountNS, n.UTSNS)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	k.spawners = append(k.spawners, sp)
	p := &proc{name: "node-init/" + n.Name, where: "node " + n.Name + " (own PID namespace)", bin: k.s.opts.Binary,
		args: []string{"lab", "node-init", "--spec", specPath}, logPath: filepath.Join(dir, "init.log"),
		spawner: sp, cloneflags: unix.CLONE_NEWPID}
	// Its own cancel: lab reboot stops one node's init (supervisor.stop).
	ctx, cancel := context.WithCancel(k.initCtx)
	p.changed, p.stopped, p.cancel = k.s.publish, make(chan struct{}), cancel
	k.s.mu.Lock()
	k.s.procs = append(k.s.procs, p)
	k.s.mu.Unlock()
	k.initWG.Add(1)
	go func() { defer k.initWG.Done(); defer cancel(); p.run(ctx) }()
	return nil
}

// labnetPath is the file of a named network namespace.
func labnetPath(name string) string { return filepath.Join("/run/netns", name) }

// stopNodes stops every node's init (its daemons and pods die with its
// PID namespace), then removes the nodes' cgroups.
func (k *kubeletLab) stopNodes() error {
	if k.initCancel != nil {
		k.initCancel()
	}
	k.initWG.Wait()
	for _, sp := range k.spawners {
		sp.close()
	}
	k.spawners = nil
	var errs []error
	if k.cgroupBase != "" {
		// Every process is gone once the inits are reaped; runc's
		// cgroups go with a short delay after their last task.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := removeCgroupTree(k.hierarchies, k.cgroupPath())
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		removeEmptyCgroups(k.madeCgroups)
	}
	return errors.Join(errs...)
}

// controlPlaneComponents starts kube-controller-manager and
// kube-scheduler inside the switch namespace, next to the API server.
func (k *kubeletLab) controlPlaneComponents() error {
	o := k.s.opts
	kc := func(user, file string) (string, error) {
		cfg, err := k.env.UserConfig(user)
		if err != nil {
			return "", err
		}
		cfg.Dial = nil
		path := filepath.Join(o.Dir, file)
		return path, testenv.WriteKubeconfig(path, cfg)
	}
	kcm, err := kc("system:kube-controller-manager", "kube-controller-manager.kubeconfig")
	if err != nil {
		return err
	}
	sched, err := kc("system:kube-scheduler", "kube-scheduler.kubeconfig")
	if err != nil {
		return err
	}
	k.s.start(&proc{name: "kube-controller-manager", where: "switch netns " + k.sw.NS.Name, bin: k.bins.ControllerManager,
		args: []string{
			"--kubeconfig=" + kcm, "--authentication-kubeconfig=" + kcm, "--authorization-kubeconfig=" + kcm,
			"--bind-address=127.0.0.1", "--secure-port=10257", "--cert-dir=" + filepath.Join(o.Dir, "kube-controller-manager"),
			"--leader-elect=false",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + k.env.PKIFile("sa.key"),
			"--root-ca-file=" + k.env.PKIFile("ca.crt"),
			"--cluster-signing-cert-file=" + k.env.PKIFile("ca.crt"),
			"--cluster-signing-key-file=" + k.env.PKIFile("ca.key"),
			"--allocate-node-cidrs=true", "--cluster-cidr=" + clusterCIDR, "--node-cidr-mask-size=24",
			"--service-cluster-ip-range=" + serviceCIDR,
			// Its default, /usr/libexec/kubernetes/kubelet-plugins/volume/exec,
			// is created on the machine at start.
			"--flex-volume-plugin-dir=" + filepath.Join(o.Dir, "kube-controller-manager", "flexvolume"),
			"--v=1",
		},
		logPath: filepath.Join(o.Dir, "kube-controller-manager.log"), spawner: k.s.swSpawner})
	k.s.start(&proc{name: "kube-scheduler", where: "switch netns " + k.sw.NS.Name, bin: k.bins.Scheduler,
		args: []string{
			"--kubeconfig=" + sched, "--authentication-kubeconfig=" + sched, "--authorization-kubeconfig=" + sched,
			"--bind-address=127.0.0.1", "--secure-port=10259", "--leader-elect=false", "--v=1",
		},
		logPath: filepath.Join(o.Dir, "kube-scheduler.log"), spawner: k.s.swSpawner})
	return nil
}

// waitRegistered waits until every node's kubelet has registered its Node,
// gives it its lab role label, and returns the nodes' pod CIDRs.
func (k *kubeletLab) waitRegistered(ctx context.Context, kube kubernetes.Interface) (map[string]netip.Prefix, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cidrs := map[string]netip.Prefix{}
	labelled := map[string]bool{}
	for {
		var waiting []string
		for _, n := range k.nodes {
			if _, ok := cidrs[n.Name]; ok {
				continue
			}
			node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				waiting = append(waiting, n.Name+" (not registered)")
				continue
			}
			if err != nil {
				waiting = append(waiting, n.Name+" ("+err.Error()+")")
				continue
			}
			if !labelled[n.Name] {
				// NodeRestriction keeps role labels from the kubelet: set
				// by an administrator, as in any cluster.
				patch := fmt.Sprintf(`{"metadata":{"labels":{"node-role.kubernetes.io/%s":""},"annotations":{"knmstate.io/lab-netns":%q}}}`, n.Role, n.NetNS)
				if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					waiting = append(waiting, n.Name+" (label: "+err.Error()+")")
					continue
				}
				labelled[n.Name] = true
			}
			if node.Spec.PodCIDR == "" {
				waiting = append(waiting, n.Name+" (no pod CIDR yet)")
				continue
			}
			p, err := netip.ParsePrefix(node.Spec.PodCIDR)
			if err != nil {
				return nil, fmt.Errorf("node %s: pod CIDR %q: %w", n.Name, node.Spec.PodCIDR, err)
			}
			cidrs[n.Name] = p
		}
		if len(waiting) == 0 {
			return cidrs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the kubelets to register (see nodes/*/kubelet.log): %s: %w", strings.Join(waiting, ", "), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// podNetwork writes each node's CNI configuration for its pod CIDR and
// routes every pod CIDR through its node in the switch namespace, which
// forwards between the nodes (their default gateway) and is where the API
// server dials webhook pods from.
func (k *kubeletLab) podNetwork(cidrs map[string]netip.Prefix) error {
	for _, key := range []string{"net/ipv4/ip_forward", "net/ipv4/conf/all/send_redirects", "net/ipv4/conf/" + labnet.BridgeName + "/send_redirects"} {
		value := "0"
		if key == "net/ipv4/ip_forward" {
			value = "1"
		}
		if err := k.sw.NS.Sysctl(key, value); err != nil {
			return err
		}
	}
	br, err := k.sw.NS.Netlink.LinkByName(labnet.BridgeName)
	if err != nil {
		return fmt.Errorf("switch bridge: %w", err)
	}
	for _, n := range k.nodes {
		cidr := cidrs[n.Name]
		conf, err := cniConfig(cidr)
		if err != nil {
			return err
		}
		dir := filepath.Join(k.s.opts.Dir, "nodes", n.Name, "etc", "cni", "net.d")
		tmp := filepath.Join(dir, ".10-lab.conflist")
		if err := os.WriteFile(tmp, conf, 0o644); err != nil {
			return err
		}
		// Renamed into place: containerd watches the directory.
		if err := os.Rename(tmp, filepath.Join(dir, "10-lab.conflist")); err != nil {
			return err
		}
		r := podCIDRRoute{CIDR: cidr, Via: netip.MustParseAddr(n.Address)}
		route := &netlink.Route{LinkIndex: br.Attrs().Index, Dst: prefixIPNet(r.CIDR), Gw: r.Via.AsSlice()}
		if err := k.sw.NS.Netlink.RouteReplace(route); err != nil {
			return fmt.Errorf("switch route %s: %w", r.describe(), err)
		}
	}
	return nil
}

// waitKubeletReady waits until every node is Ready as its kubelet reports
// it (the pod network configured included).
func waitKubeletReady(ctx context.Context, kube kubernetes.Interface, nodes []NodeState) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		var notReady []string
		for _, n := range nodes {
			node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				notReady = append(notReady, n.Name+" ("+err.Error()+")")
				continue
			}
			ready := false
			msg := "no Ready condition"
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready, msg = c.Status == corev1.ConditionTrue, c.Message
				}
			}
			if !ready {
				notReady = append(notReady, n.Name+" ("+msg+")")
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not Ready: %s: %w", strings.Join(notReady, "; "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// prefixIPNet is p as the netlink library's type.
func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// buildKubelet is kubelet mode: real kubelets register the nodes, and
// knmstate runs as the pods of deploy/knmstate.
func (s *supervisor) buildKubelet(ctx context.Context, cancel context.CancelFunc, env *testenv.Env, sw *labnet.Switch, kube kubernetes.Interface, nodes []NodeState, teardown *[]func()) error {
	o := s.opts
	t := time.Now()
	bins, err := resolveKubeBinaries(o.KubeBinDir)
	if err != nil {
		return err
	}
	k := &kubeletLab{s: s, bins: bins, env: env, sw: sw, nodes: nodes}
	s.kubelet = k
	k.initCtx, k.initCancel = context.WithCancel(s.procCtx)
	*teardown = append(*teardown, func() {
		if err := k.stopNodes(); err != nil {
			s.log.Error("stop nodes", "err", err)
		}
	})
	if k.hierarchies, err = cgroupHierarchies(); err != nil {
		return err
	}
	if k.cgroupBase, err = memoryCgroup(); err != nil {
		return err
	}

	// The registry first: the nodes' containerd pull the pause image
	// from it as soon as the kubelet asks for a sandbox.
	images, err := k.serveImages(ctx, teardown)
	if err != nil {
		return err
	}
	k.images = images
	s.mu.Lock()
	s.state.Kubelet, s.state.CgroupPath, s.state.Images = true, k.cgroupPath(), images
	s.mu.Unlock()
	s.step("registry with the images of make images", t)

	t = time.Now()
	if err := k.controlPlaneComponents(); err != nil {
		return err
	}
	for i := range nodes {
		spec, err := k.prepareNode(&nodes[i])
		if err != nil {
			return err
		}
		if err := k.startNodeInit(&nodes[i], spec); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	s.publish()
	if o.eth0ByNetworkManager() {
		if err := waitLeases(ctx, sw, nodes, time.Minute); err != nil {
			return fmt.Errorf("%w (NetworkManager configures eth0: nodes/*/NetworkManager.log)", err)
		}
		s.step("NetworkManager on every node: eth0 configured by DHCP", t)
		t = time.Now()
	}
	cidrs, err := k.waitRegistered(ctx, kube)
	if err != nil {
		return err
	}
	s.step("kubelets registered their nodes", t)
	t = time.Now()
	if err := k.podNetwork(cidrs); err != nil {
		return err
	}
	if err := waitKubeletReady(ctx, kube, nodes); err != nil {
		return err
	}
	s.step("pod network; nodes Ready", t)

	if o.OpenShiftPlatform != "" {
		t = time.Now()
		if err := k.playOpenShift(ctx, kube, teardown); err != nil {
			return err
		}
		s.step("playing OpenShift: config.openshift.io CRDs, infrastructure/cluster on "+o.OpenShiftPlatform+", service CA", t)
	}
	if o.Install == InstallNone {
		if o.OpenShiftPlatform != "" {
			s.note("the payload is not applied (--install none): deploy/openshift's files, in file-name order, with the lab registry's image, install it")
			return nil
		}
		s.note("knmstate is not installed (--install none): kubectl apply -k deploy/operator (with the lab registry's image) installs it")
		return nil
	}
	t = time.Now()
	switch o.Install {
	case InstallPayload:
		if err := k.installPayload(ctx, kube); err != nil {
			return err
		}
		s.step("knmstate (deploy/openshift, as the Cluster Version Operator applies it): ClusterOperator "+manifest.ClusterOperatorName+" Available", t)
		return nil
	case InstallOperator:
		if err := k.installOperator(ctx); err != nil {
			return err
		}
	default:
		if err := k.deploy(ctx); err != nil {
			return err
		}
	}
	if err := k.waitWorkloads(ctx, kube); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	if err := waitNNS(ctx, dyn, nodes, 2*time.Minute); err != nil {
		return err
	}
	s.step("knmstate ("+o.Install+"): handler on every node, controller; every node has a NodeNetworkState", t)
	return nil
}

// installOperator applies the operator bundle (the lab registry's image,
// the lab's handler arguments passed through the operator) and an NMState
// whose DNS probe asks the lab's own DNS name, and waits until the NMState
// is Available.
func (k *kubeletLab) installOperator(ctx context.Context) error {
	p := manifest.Params{Image: k.images["knmstate"], HandlerArgs: k.s.opts.HandlerArgs}
	bundle, err := manifest.OperatorBundle(p)
	if err != nil {
		return err
	}
	nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}
	nm.Spec.ProbeConfiguration.DNS.Host = apiHost
	scheme, err := manifest.Scheme()
	if err != nil {
		return err
	}
	if err := nmstatev1.AddToScheme(scheme); err != nil {
		return err
	}
	objs := append(bundle, nm)
	if err := manifest.WithKinds(scheme, objs); err != nil {
		return err
	}
	var us []*unstructured.Unstructured
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		us = append(us, u)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.env.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(k.env.Config)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, dyn, mapper, us); err != nil {
		return err
	}
	return waitNMStateAvailable(ctx, dyn, nm.Name)
}

// waitNMStateAvailable waits for the NMState's Available condition.
func waitNMStateAvailable(ctx context.Context, dyn dynamic.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	gvr := nmstatev1.GroupVersion.WithResource("nmstates")
	last := "not found"
	for {
		o, err := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			last = fmt.Sprint(conds)
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Available" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("NMState %s not Available (kubectl -n %s logs deploy/%s): %s: %w", name, componentNamespace, manifest.OperatorName, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// serveImages runs the lab registry in the switch namespace and pushes
// the images of `make images` into it; it returns them by name as
// references by digest.
func (k *kubeletLab) serveImages(ctx context.Context, teardown *[]func()) (map[string]string, error) {
	o := k.s.opts
	type imageIn struct {
		rec image.Record
		dir string
		key string // the name in the result
	}
	var ins []imageIn
	for _, name := range []string{"knmstate", "pause"} {
		rec, err := image.ReadRecord(o.Images, name)
		if err != nil {
			return nil, fmt.Errorf("kubelet mode needs the images of `make images` in %s: %w", o.Images, err)
		}
		ins = append(ins, imageIn{rec, o.Images, name})
	}
	// The OpenShift console plugin's image, when `make images` made it
	// (the operator deploys the plugin from it on a lab playing OpenShift).
	switch rec, err := image.ReadRecord(o.Images, consolePluginImage); {
	case err == nil:
		ins = append(ins, imageIn{rec, o.Images, consolePluginImage})
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	// More versions of knmstate's image (upgrade tests), served too.
	for _, dir := range o.MoreImages {
		rec, err := image.ReadRecord(dir, "knmstate")
		if err != nil {
			return nil, fmt.Errorf("more images: %w", err)
		}
		ins = append(ins, imageIn{rec, dir, "knmstate:" + rec.Tag})
	}
	var l net.Listener
	addr := net.JoinHostPort(k.sw.Options.Gateway4.Addr().String(), fmt.Sprint(registryPort))
	if err := k.sw.NS.Do(func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return nil, fmt.Errorf("registry listener: %w", err)
	}
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	logf, err := os.Create(filepath.Join(o.Dir, "registry.log"))
	if err != nil {
		l.Close()
		rcancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := registry.Serve(rctx, l, logf); err != nil {
			k.s.log.Error("registry", "err", err)
		}
	}()
	*teardown = append(*teardown, func() { rcancel(); <-done; logf.Close() })
	out := map[string]string{}
	for _, in := range ins {
		rec := in.rec
		digest, err := registry.Push(ctx, filepath.Join(in.dir, rec.Layout), addr, rec.Name+":"+rec.Tag, k.env.Config.Dial)
		if err != nil {
			return nil, err
		}
		if digest.String() != rec.Digest {
			return nil, fmt.Errorf("image %s: the registry has %s, the layout's record says %s", rec.Name, digest, rec.Digest)
		}
		out[in.key] = imageRef(rec.Name, rec.Digest)
	}
	return out, nil
}

// deploy applies RBAC and the workloads of deploy/knmstate, with the
// lab registry's image and the lab's handler arguments: what `kubectl
// apply -k deploy/knmstate` with `kustomize edit set image` does.
func (k *kubeletLab) deploy(ctx context.Context) error {
	rbacDocs, err := rbac.Manifests()
	if err != nil {
		return err
	}
	workloads, err := deploy.Workloads()
	if err != nil {
		return err
	}
	objs, err := decodeDocs(append(rbacDocs, workloads...)...)
	if err != nil {
		return err
	}
	handlerArgs := append([]string{"--probe-dns-host=" + apiHost}, k.s.opts.HandlerArgs...)
	for _, o := range objs {
		switch o.GetKind() {
		case "DaemonSet", "Deployment":
			if err := setImages(o, deploy.Image, k.images["knmstate"]); err != nil {
				return err
			}
		}
		if o.GetKind() == "DaemonSet" && o.GetName() == handlerDaemonSet {
			if err := appendArgs(o, "handler", handlerArgs); err != nil {
				return err
			}
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.env.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(k.env.Config)
	if err != nil {
		return err
	}
	return applyObjects(ctx, dyn, mapper, objs)
}

// consolePluginImage is the console plugin image's name in bin/images.
const consolePluginImage = "knmstate-console-plugin"

// Names of the workloads in deploy/knmstate.
const (
	handlerDaemonSet     = "knmstate-handler"
	controllerDeployment = "knmstate-controller"
)

// waitWorkloads waits until a handler pod is ready on every node and every
// controller replica is available.
func (k *kubeletLab) waitWorkloads(ctx context.Context, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		var waiting []string
		ds, err := kube.AppsV1().DaemonSets(k.namespace()).Get(ctx, handlerDaemonSet, metav1.GetOptions{})
		switch {
		case err != nil:
			waiting = append(waiting, "handler: "+err.Error())
		case ds.Status.NumberReady < int32(len(k.nodes)) || ds.Status.ObservedGeneration < ds.Generation:
			waiting = append(waiting, fmt.Sprintf("handler: %d of %d pods ready", ds.Status.NumberReady, len(k.nodes)))
		}
		dep, err := kube.AppsV1().Deployments(k.namespace()).Get(ctx, controllerDeployment, metav1.GetOptions{})
		switch {
		case err != nil:
			waiting = append(waiting, "controller: "+err.Error())
		case dep.Spec.Replicas == nil || dep.Status.AvailableReplicas < *dep.Spec.Replicas || dep.Status.ObservedGeneration < dep.Generation:
			waiting = append(waiting, fmt.Sprintf("controller: %d available", dep.Status.AvailableReplicas))
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for knmstate's pods (kubectl -n %s get pods -o wide; nodes/*/kubelet.log): %s: %w",
				k.namespace(), strings.Join(waiting, "; "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
