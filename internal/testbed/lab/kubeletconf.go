package lab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Addresses of kubelet mode.
const (
	// serviceCIDR is the Service IP range; the `kubernetes` Service is its
	// first address.
	serviceCIDR = "10.96.0.0/16"
	// clusterCIDR is the pod network; kube-controller-manager hands every
	// node a /24 of it.
	clusterCIDR = "10.244.0.0/16"
	// registryName is the lab registry's name in the lab's DNS.
	registryName = "registry"
	// registryPort is where the registry listens on the switch's address.
	registryPort = 5000
	// cniBinDir is where Debian's containernetworking-plugins are.
	cniBinDir = "/usr/lib/cni"
)

// registryHost is the registry's host:port as nodes pull from it.
func registryHost() string { return fmt.Sprintf("%s.lab.example:%d", registryName, registryPort) }

// kubeletNode is what the configuration files of one node in kubelet mode
// are made from. Paths are host paths inside the node's directory; the
// node sees the machine's filesystem except its own /run (tmpfs), /var/lib
// and /var/log (its directory's), so they mean the same inside.
type kubeletNode struct {
	Name    string
	Address netip.Addr
	// Dir is the node's directory (DIR/nodes/NAME).
	Dir string
	// CgroupRoot is the kubelet's cgroupRoot.
	CgroupRoot string
	// CAFile is the cluster CA (client certificates of the API server
	// and of users calling the kubelet).
	CAFile string
	// PauseImage is the sandbox image reference in the lab registry.
	PauseImage string
	// Snapshotter is containerd's snapshotter: overlayfs, or native where
	// the lab directory cannot hold overlay mounts.
	Snapshotter string
}

// Paths of a node's files, inside Dir.
func (n kubeletNode) path(elem ...string) string {
	return filepath.Join(append([]string{n.Dir}, elem...)...)
}

func (n kubeletNode) containerdConfigPath() string { return n.path("etc", "containerd", "config.toml") }
func (n kubeletNode) registryHostsDir() string     { return n.path("etc", "containerd", "certs.d") }
func (n kubeletNode) cniConfDir() string           { return n.path("etc", "cni", "net.d") }
func (n kubeletNode) kubeletConfigPath() string    { return n.path("etc", "kubernetes", "kubelet.yaml") }
func (n kubeletNode) kubeletKubeconfig() string {
	return n.path("etc", "kubernetes", "kubelet.kubeconfig")
}
func (n kubeletNode) proxyConfigPath() string { return n.path("etc", "kubernetes", "kube-proxy.yaml") }
func (n kubeletNode) proxyKubeconfig() string {
	return n.path("etc", "kubernetes", "kube-proxy.kubeconfig")
}

// containerdSocket is containerd's socket as the node sees it (its /run).
const containerdSocket = "/run/containerd/containerd.sock"

// containerdConfig is containerd 2's configuration (version 3): its own
// root and state below the node's /var/lib and /run, the CRI plugin with
// runc through the v2 shim and cgroupfs (the kubelet's driver), the lab's
// pause image, the node's own CNI configuration directory and registry
// hosts directory.
func (n kubeletNode) containerdConfig() string {
	return fmt.Sprintf(`# written by knmstate lab for node %[1]s
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = %[2]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = %[3]q
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[4]q
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %[5]q

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This machine's root may lack CAP_SYS_RESOURCE: negative OOM score
  # adjustments are refused, and runc then fails every sandbox.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[6]q]
    conf_dir = %[7]q
`, n.Name, containerdSocket, n.Snapshotter, n.PauseImage, n.registryHostsDir(), cniBinDir, n.cniConfDir())
}

// registryHostsConfig is containerd's hosts.toml for the lab registry:
// plain HTTP, pull and resolve only.
func registryHostsConfig() string {
	return fmt.Sprintf(`# written by knmstate lab: the lab's registry, plain HTTP
server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, registryHost())
}

// kubeletConfig is the KubeletConfiguration of a lab node. What matters
// for the machine: protectKernelDefaults (the kubelet checks the kernel
// settings it wants instead of writing them; the node's mount namespace
// shows it read-only files with those values), a volume plugin directory
// and a cgroup root of the node's own.
func (n kubeletNode) kubeletConfig() string {
	return fmt.Sprintf(`# written by knmstate lab for node %[1]s
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1 hierarchies.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[2]s
containerRuntimeEndpoint: unix://%[3]s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
protectKernelDefaults: true
volumePluginDir: /var/lib/kubelet/volume-plugins
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
serializeImagePulls: false
# The lab's pods are few and small; never evict them for the machine's
# disk or memory, and never collect their images.
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
`, n.Name, n.CgroupRoot, containerdSocket, n.CAFile)
}

// kubeletArgs are the kubelet's command line.
func (n kubeletNode) kubeletArgs() []string {
	return []string{
		"--config=" + n.kubeletConfigPath(),
		"--kubeconfig=" + n.kubeletKubeconfig(),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.Address.String(),
		"--v=1",
	}
}

// kubeProxyConfig is kube-proxy's configuration: nftables mode, and the
// conntrack settings left alone (some are machine-wide).
func (n kubeletNode) kubeProxyConfig() string {
	return fmt.Sprintf(`# written by knmstate lab for node %[1]s
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[2]s
mode: nftables
clusterCIDR: %[3]s
hostnameOverride: %[1]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`, n.Name, n.proxyKubeconfig(), clusterCIDR)
}

// cniConfig is the node's pod network: the bridge plugin (cni0, the
// gateway of the node's pod CIDR) with host-local addresses from the
// node's podCIDR, no masquerade: the lab switch routes every node's pod
// CIDR to that node, so pods, nodes and the control plane reach each other
// by their own addresses.
func cniConfig(podCIDR netip.Prefix) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "lab",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": podCIDR.String()}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// kernelDefaults are the settings a kubelet with protectKernelDefaults
// checks (pkg/kubelet/cm: setupKernelTunables), by /proc/sys path. The
// node's mount namespace shows read-only files with these values over the
// machine's, which the kubelet must never change.
var kernelDefaults = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// imageRef is a reference by digest in the lab registry.
func imageRef(repo, digest string) string {
	return registryHost() + "/" + repo + "@" + digest
}

// podCIDRRoute says which node's address a pod CIDR is reached through.
type podCIDRRoute struct {
	CIDR netip.Prefix
	Via  netip.Addr
}

// describe is the route in iproute2's words, for logs.
func (r podCIDRRoute) describe() string {
	return strings.Join([]string{r.CIDR.String(), "via", r.Via.String()}, " ")
}
