package openshift

import (
	"bytes"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Network types of install-config's networking.networkType.
const (
	OVNKubernetes = "OVNKubernetes"
	// BrEx is the OVS bridge (and its internal interface) that
	// OVN-Kubernetes uses for the node's external traffic.
	BrEx = "br-ex"
)

// InstallConfig is what rendering needs of an install-config: the cluster's
// name, its network type and the hosts' NMState. Every other field is
// ignored.
type InstallConfig struct {
	// ClusterName and BaseDomain are metadata.name and baseDomain.
	ClusterName, BaseDomain string
	// NetworkType is networking.networkType, OVNKubernetes when unset (the
	// installer's default).
	NetworkType string
	Hosts       []Host
}

// Host is one networking.hostConfig[] entry.
type Host struct {
	Name string
	// Path locates the entry in the install-config, for errors.
	Path string
	// NetworkConfig is the host's NMState document, anchors resolved, as
	// the user wrote it (key order and comments kept).
	NetworkConfig []byte
	// State is NetworkConfig decoded by the engine.
	State *nmstate.State
}

// rawInstallConfig mirrors the few keys read; hostConfig entries stay YAML
// nodes so their networkConfig goes to the engine's strict decoder with
// line numbers.
type rawInstallConfig struct {
	BaseDomain string `yaml:"baseDomain"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Networking struct {
		NetworkType string      `yaml:"networkType"`
		HostConfig  []yaml.Node `yaml:"hostConfig"`
	} `yaml:"networking"`
}

// HostError is a problem of one host's configuration.
type HostError struct {
	Host string
	// Path is the location in the install-config.
	Path string
	Err  error
}

func (e *HostError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("host %s: %v", e.Host, e.Err)
	}
	return fmt.Sprintf("host %s: %s: %v", e.Host, e.Path, e.Err)
}

func (e *HostError) Unwrap() error { return e.Err }

// ParseInstallConfig reads an install-config and decodes, validates and
// checks every host's networkConfig. All problems are returned at once
// (errors.Join of *HostError), each naming its host and path.
func ParseInstallConfig(data []byte) (*InstallConfig, error) {
	var raw rawInstallConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("reading install-config: %w", err)
	}
	ic := &InstallConfig{
		ClusterName: raw.Metadata.Name, BaseDomain: raw.BaseDomain,
		NetworkType: raw.Networking.NetworkType,
	}
	if ic.NetworkType == "" {
		ic.NetworkType = OVNKubernetes
	}
	if len(raw.Networking.HostConfig) == 0 {
		return nil, errors.New("install-config: networking.hostConfig: no hosts")
	}
	var errs []error
	seen := map[string]string{}
	for i := range raw.Networking.HostConfig {
		h, err := parseHost(&raw.Networking.HostConfig[i], fmt.Sprintf("networking.hostConfig[%d]", i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, dup := seen[h.Name]; dup {
			errs = append(errs, &HostError{Host: h.Name, Path: h.Path + ".name", Err: fmt.Errorf("host name already used by %s", first)})
			continue
		}
		seen[h.Name] = h.Path
		if ic.NetworkType == OVNKubernetes {
			if err := CheckBrEx(h.State); err != nil {
				errs = append(errs, &HostError{Host: h.Name, Path: h.Path + ".networkConfig", Err: err})
				continue
			}
		}
		ic.Hosts = append(ic.Hosts, *h)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ic, nil
}

// parseHost reads one hostConfig entry: its name (a valid short host
// name: it becomes a file name the node picks by `hostname -s`) and its
// networkConfig.
func parseHost(n *yaml.Node, path string) (*Host, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, &HostError{Host: "?", Path: path, Err: fmt.Errorf("line %d: not a mapping", n.Line)}
	}
	var name string
	var cfg *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, resolve(n.Content[i+1])
		switch k {
		case "name":
			if v.Kind != yaml.ScalarNode {
				return nil, &HostError{Host: "?", Path: path + ".name", Err: fmt.Errorf("line %d: not a string", v.Line)}
			}
			name = v.Value
		case "networkConfig":
			cfg = v
		}
	}
	if name == "" {
		return nil, &HostError{Host: "?", Path: path + ".name", Err: errors.New("missing")}
	}
	if err := checkHostName(name); err != nil {
		return nil, &HostError{Host: name, Path: path + ".name", Err: err}
	}
	if cfg == nil {
		return nil, &HostError{Host: name, Path: path + ".networkConfig", Err: errors.New("missing")}
	}
	cfgPath := path + ".networkConfig"
	expanded := expand(cfg)
	st, err := nmstate.DecodeNode(expanded)
	if err == nil {
		err = nmstate.Validate(st, nil).Err()
	}
	if err != nil {
		var list nmstate.ErrorList
		if errors.As(err, &list) {
			errs := make([]error, 0, len(list))
			for _, e := range list {
				p := cfgPath
				if e.Path != "" {
					p += "." + string(e.Path)
				}
				d := e.Detail
				if e.Line > 0 {
					d = fmt.Sprintf("%s (line %d)", d, e.Line)
				}
				errs = append(errs, &HostError{Host: name, Path: p, Err: errors.New(d)})
			}
			return nil, errors.Join(errs...)
		}
		return nil, &HostError{Host: name, Path: cfgPath, Err: err}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(expanded); err != nil {
		return nil, &HostError{Host: name, Path: cfgPath, Err: fmt.Errorf("encoding: %w", err)}
	}
	if err := enc.Close(); err != nil {
		return nil, &HostError{Host: name, Path: cfgPath, Err: fmt.Errorf("encoding: %w", err)}
	}
	return &Host{Name: name, Path: path, NetworkConfig: buf.Bytes(), State: st}, nil
}

// checkHostName accepts what `hostname -s` can print and a file name can
// hold: an RFC 1123 label. "cluster" is refused: cluster.yml is the
// cluster-wide file every host without its own applies.
func checkHostName(name string) error {
	if len(name) > 63 {
		return fmt.Errorf("%q: longer than 63 characters", name)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(name)-1
		if !ok {
			return fmt.Errorf("%q: not a short host name (lowercase letters, digits and inner '-'; no dots)", name)
		}
	}
	if name == ClusterFileHost {
		return fmt.Errorf("%q: reserved for the cluster-wide file", name)
	}
	return nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// expand returns a copy of n with every alias replaced by a copy of what it
// names and anchors dropped: each host's file stands alone, and merge keys
// (`<<: *base`) are left to the decoder, which refuses them as unknown
// keys rather than guessing.
func expand(n *yaml.Node) *yaml.Node {
	n = resolve(n)
	c := *n
	c.Anchor = ""
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = expand(k)
		}
	}
	return &c
}
