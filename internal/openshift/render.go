package openshift

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_2"
	igntypes "github.com/coreos/ignition/v2/config/v3_2/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Node paths and names shared with OpenShift's own nmstate-configuration
// (machine-config-operator), so both read the same files and the same flag.
const (
	// SourceDir holds <short hostname>.yml files and cluster.yml.
	SourceDir = "/etc/nmstate/openshift"
	// AppliedFile is the flag: its presence makes configure-ovs leave br-ex
	// alone, and its content (a copy of the file applied) makes later boots
	// (ours and MCO's script) do nothing while the chosen file is unchanged.
	AppliedFile = SourceDir + "/applied"
	// ClusterFileHost names the cluster-wide file (cluster.yml).
	ClusterFileHost = "cluster"
	// FirstBootUnit is the systemd unit that runs the first-boot apply.
	FirstBootUnit = "knmstate-first-boot.service"
	// DefaultImage is the payload's image reference for knmstate (the
	// release tooling substitutes the digest).
	DefaultImage = "registry.ci.openshift.org/openshift:knmstate"
	// roleLabel is the MachineConfigPool selector label.
	roleLabel = "machineconfiguration.openshift.io/role"
)

// Roles are the pools MachineConfigs are rendered for.
var Roles = []string{"master", "worker"}

// RenderOptions tune Render.
type RenderOptions struct {
	// Image runs the first-boot apply (default DefaultImage).
	Image string
	// EphemeralNetworkManager also renders, per role, the MachineConfig
	// that keeps NetworkManager profiles made at run time in /run, so they
	// are gone after a reboot and the handler puts policies back.
	EphemeralNetworkManager bool
}

// Render returns the manifests to add to the installer's manifests
// directory, by file name: per role, a MachineConfig carrying every host's
// file (install-config does not say which host has which role; a host
// only ever reads its own name's file) and the first-boot unit.
func Render(ic *InstallConfig, o RenderOptions) (map[string][]byte, error) {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	out := map[string][]byte{}
	for _, role := range Roles {
		cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
		hosts := append([]Host(nil), ic.Hosts...)
		sort.Slice(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
		for _, h := range hosts {
			cfg.Storage.Files = append(cfg.Storage.Files, file(path.Join(SourceDir, h.Name+".yml"), 0o644, h.NetworkConfig))
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, unit(FirstBootUnit, firstBootUnit(o.Image, apiInt(ic))))
		name := "10-knmstate-nmstate-" + role
		b, err := machineConfig(name, role, cfg)
		if err != nil {
			return nil, err
		}
		out[name+".yaml"] = b

		if o.EphemeralNetworkManager {
			name := "99-knmstate-ephemeral-nm-" + role
			b, err := machineConfig(name, role, ephemeralNM())
			if err != nil {
				return nil, err
			}
			out[name+".yaml"] = b
		}
	}
	return out, nil
}

// machineConfig wraps an Ignition config, validated by Ignition's own
// parser, in a MachineConfig for role.
func machineConfig(name, role string, cfg igntypes.Config) ([]byte, error) {
	raw, err := compactJSON(cfg)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: encoding ignition: %w", name, err)
	}
	if _, rpt, err := ign.Parse(raw); err != nil {
		return nil, fmt.Errorf("machineconfig %s: ignition refuses the config: %w: %s", name, err, rpt.String())
	}
	mc := &mcfgv1.MachineConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{roleLabel: role}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mc)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: %w", name, err)
	}
	// A manifest, not an object read back: no creationTimestamp: null,
	// no empty optional fields.
	delete(u["metadata"].(map[string]any), "creationTimestamp")
	prune(u)
	b, err := yaml.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: %w", name, err)
	}
	return b, nil
}

func file(p string, mode int, data []byte) igntypes.File {
	src := "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(data)
	overwrite := true
	return igntypes.File{
		Node:          igntypes.Node{Path: p, Overwrite: &overwrite},
		FileEmbedded1: igntypes.FileEmbedded1{Mode: &mode, Contents: igntypes.Resource{Source: &src}},
	}
}

func unit(name, contents string) igntypes.Unit {
	enabled := true
	return igntypes.Unit{Name: name, Enabled: &enabled, Contents: &contents}
}

// firstBootUnit runs `nmstatectl first-boot` from knmstate's image once
// Open vSwitch runs and before anything that builds or needs br-ex:
// OpenShift's own nmstate-configuration (which then finds the applied file
// identical and does nothing), configure-ovs (which finds the flag and
// skips), node IP selection and kubelet. A failure leaves no flag, so
// configure-ovs builds br-ex as it would without us, and the unit shows
// as failed with the reason in the journal.
// apiInt is the API server's internal name (api-int.<cluster>.<domain>),
// which nodes use and DNS serves before kubelet runs; "" when the
// install-config lacks the name or domain.
func apiInt(ic *InstallConfig) string {
	if ic.ClusterName == "" || ic.BaseDomain == "" {
		return ""
	}
	return "api-int." + ic.ClusterName + "." + ic.BaseDomain
}

func firstBootUnit(image, apiHost string) string {
	// The probes: the API server's name must still resolve and its port
	// answer after the change (each only if it did before).
	probes := ""
	if apiHost != "" {
		probes = " --probe-dns-host " + apiHost + " --probe-tcp " + apiHost + ":6443"
	}
	return strings.Join([]string{
		"[Unit]",
		"Description=knmstate: apply this host's NMState from " + SourceDir + " before OVS networking and kubelet",
		"Requires=openvswitch.service",
		"Wants=NetworkManager-wait-online.service",
		"After=NetworkManager-wait-online.service openvswitch.service network.service",
		"Before=nmstate-configuration.service nmstate.service ovs-configuration.service nodeip-configuration.service wait-for-node-ip.service node-valid-hostname.service kubelet-dependencies.target",
		"",
		"[Service]",
		"Type=oneshot",
		"RemainAfterExit=yes",
		// The pull secret is on the node before the first boot's network
		// units run; the host's namespaces, /etc/nmstate and the OVS
		// socket are the node's own; the system bus lets nmstatectl's
		// backend choice (auto) find NetworkManager, which owns the NICs
		// on RHCOS.
		"ExecStart=/usr/bin/podman run --rm --privileged --net=host --pid=host --uts=host" +
			" --authfile /var/lib/kubelet/config.json" +
			" -v /etc/nmstate:/etc/nmstate:z -v /var/lib/knmstate:/var/lib/knmstate:z" +
			" -v /run/openvswitch:/run/openvswitch -v /run/dbus:/run/dbus -v /etc/resolv.conf:/etc/resolv.conf" +
			" " + image +
			" nmstatectl --state-dir /var/lib/knmstate first-boot --source-dir " + SourceDir + probes,
		"StandardOutput=journal+console",
		"StandardError=journal+console",
		"",
		"[Install]",
		"WantedBy=network-online.target",
		"",
	}, "\n")
}

// Option C: NetworkManager keeps the profiles it writes at run time in an
// overlay whose upper layer is on /run, so a policy's profiles vanish at
// reboot and the handler applies the policies again; the persistent
// profiles (installer, MachineConfigs) are the lower layer. The directory
// and unit names avoid "-" (escaped \x2d in unit names, which some systemd
// versions failed to enable).
const (
	nmMerged   = "/etc/NetworkManager/systemConnectionsMerged"
	nmLower    = "/etc/NetworkManager/system-connections"
	nmUpper    = "/run/nm-system-connections"
	nmWork     = "/run/nm-system-connections-work"
	nmMountUnt = "etc-NetworkManager-systemConnectionsMerged.mount"
)

func ephemeralNM() igntypes.Config {
	cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
	// 99- sorts after OpenShift's 20-keyfiles.conf, which pins the
	// persistent directory: the later file wins.
	conf := "# knmstate: profiles made at run time live in /run (see " + nmMountUnt + ")\n[keyfile]\npath=" + nmMerged + "\n"
	tmpfiles := strings.Join([]string{
		"# knmstate: upper and work layers of " + nmMerged + " (on /run: emptied at boot)",
		"D " + nmUpper + " 0755 root root - -",
		"D " + nmWork + " 0755 root root - -",
		"d " + nmMerged + " 0755 root root - -",
		"",
	}, "\n")
	mount := strings.Join([]string{
		"[Unit]",
		"Description=knmstate: NetworkManager profiles made at run time are lost at reboot",
		"After=systemd-tmpfiles-setup.service",
		"Before=NetworkManager.service",
		"",
		"[Mount]",
		"What=overlay",
		"Where=" + nmMerged,
		"Type=overlay",
		"Options=lowerdir=" + nmLower + ",upperdir=" + nmUpper + ",workdir=" + nmWork,
		"",
		"[Install]",
		"WantedBy=multi-user.target",
		"",
	}, "\n")
	cfg.Storage.Files = []igntypes.File{
		file("/etc/NetworkManager/conf.d/99-knmstate-ephemeral.conf", 0o644, []byte(conf)),
		file("/etc/tmpfiles.d/knmstate-nm.conf", 0o644, []byte(tmpfiles)),
	}
	cfg.Systemd.Units = []igntypes.Unit{unit(nmMountUnt, mount)}
	return cfg
}

// compactJSON encodes v without the empty objects and strings Go's encoder
// writes for Ignition's non-pointer structs ("user": {}), so the manifest
// shows what the node gets; Ignition validates this very encoding.
func compactJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	prune(m)
	return json.Marshal(m)
}

// prune removes empty strings, nulls and maps that are empty once pruned.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		case string:
			if x == "" {
				delete(m, k)
			}
		case nil:
			delete(m, k)
		}
	}
}
