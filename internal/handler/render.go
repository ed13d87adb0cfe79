package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmpolicy"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// rendered is a policy's desired state for this node.
type rendered struct {
	// Desired is the state to apply; nil when the policy asks for nothing.
	Desired *nmstate.State
	// Status is Desired in its canonical JSON, for the enactment status.
	Status shared.State
	// Captured is the capture cache to store in the enactment.
	Captured map[string]shared.NodeNetworkConfigurationEnactmentCapturedState
	// Features are the nmstate features Desired uses (sorted), for the
	// enactment's status.features.
	Features []string
	// NoDefaultTrunk are the linux-bridge ports ("br1/eth1") that would
	// have got upstream's default VLAN trunk but did not, because the
	// kernel cannot filter VLANs on bridges: the enactment says so.
	NoDefaultTrunk []string
}

// renderError is a failure to produce the desired state: the user must fix
// the policy, retrying cannot help.
type renderError struct{ err error }

func (e *renderError) Error() string {
	return "failure generating desiredState and capturedStates: " + e.err.Error()
}
func (e *renderError) Unwrap() error { return e.err }

// renderOptions are what rendering needs to know of the node.
type renderOptions struct {
	// DefaultBridgeVLANs adds upstream's default VLAN trunk to linux-bridge
	// ports. Off when the kernel cannot filter VLANs on bridges: the
	// default would make every linux-bridge policy fail on such a node,
	// for a setting the user never asked for.
	DefaultBridgeVLANs bool
	// Node fills the {{ node... }} templates (knmstate's per-node values).
	Node extension.NodeValues
	// Pool, when set, adds PoolAddr to its interface (knmstate.io/ipv4-pool).
	Pool     *extension.Pool
	PoolAddr netip.Addr
}

// renderPolicy resolves the policy's captures against current (reusing the
// cached ones), fills the templates, adds upstream's default VLAN
// filtering to linux-bridge ports (when opts allow), and decodes and
// validates the result against the schema. It is pure: current and cache
// are not modified.
func renderPolicy(spec shared.NodeNetworkConfigurationPolicySpec, current *nmstate.State,
	cache map[string]shared.NodeNetworkConfigurationEnactmentCapturedState, now time.Time, opts renderOptions) (rendered, error) {
	fail := func(format string, args ...any) (rendered, error) {
		return rendered{}, &renderError{fmt.Errorf(format, args...)}
	}
	desiredDoc, err := nmpolicy.DecodeDocument(spec.DesiredState.Raw)
	if err != nil {
		return fail("desiredState: %w", err)
	}
	desiredDoc, problems := extension.RenderNode(desiredDoc, opts.Node)
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = fmt.Errorf("desiredState.%w", p)
		}
		return rendered{}, &renderError{errors.Join(errs...)}
	}
	if opts.Pool != nil {
		if desiredDoc, err = extension.FillPool(desiredDoc, opts.Pool, opts.PoolAddr); err != nil {
			return rendered{}, &renderError{err}
		}
	}
	curJSON, err := nmstate.EncodeJSON(current)
	if err != nil {
		return fail("encoding the current state: %w", err)
	}
	curDoc, err := nmpolicy.DecodeDocument(curJSON)
	if err != nil {
		return fail("current state: %w", err)
	}
	var nmCache nmpolicy.CapturedStates
	if len(cache) > 0 {
		raw, err := json.Marshal(cache)
		if err != nil {
			return fail("capturedStates: %w", err)
		}
		if err := json.Unmarshal(raw, &nmCache); err != nil {
			return fail("capturedStates: %w", err)
		}
	}
	gen, err := nmpolicy.GenerateState(nmpolicy.Policy{Capture: spec.Capture, DesiredState: desiredDoc}, curDoc, nmCache, now)
	if err != nil {
		return rendered{}, &renderError{err}
	}
	var out rendered
	if len(gen.CapturedStates) > 0 {
		raw, err := json.Marshal(gen.CapturedStates)
		if err != nil {
			return fail("capturedStates: %w", err)
		}
		if err := json.Unmarshal(raw, &out.Captured); err != nil {
			return fail("capturedStates: %w", err)
		}
	}
	if gen.DesiredState == nil {
		return out, nil
	}
	if opts.DefaultBridgeVLANs {
		addDefaultBridgeVLANs(gen.DesiredState)
	} else {
		out.NoDefaultTrunk = defaultTrunkPorts(gen.DesiredState)
	}
	raw, err := json.Marshal(gen.DesiredState)
	if err != nil {
		return fail("desiredState: %w", err)
	}
	desired, err := nmstate.Decode(raw)
	if err != nil {
		return fail("%w", err)
	}
	if err := nmstate.Validate(desired, nil).Err(); err != nil {
		return fail("%w", err)
	}
	canon, err := nmstate.EncodeJSON(desired)
	if err != nil {
		return fail("encoding desiredState: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, canon); err != nil {
		return fail("encoding desiredState: %w", err)
	}
	canon = compact.Bytes()
	if !apply.IsEmpty(desired) {
		out.Desired = desired
		// As upstream, features are a report: a state the statistic
		// cannot merge fails at apply with the real error.
		if st, err := nmstate.Statistic(desired, current); err == nil && len(st.Features) > 0 {
			out.Features = st.Features
		}
	}
	out.Status = shared.State{Raw: canon}
	return out, nil
}

// defaultTrunk is upstream's default VLAN filtering of a linux-bridge
// port: a trunk of VLANs 2-4094 (the port's PVID stays 1).
func defaultTrunk() map[string]any {
	return map[string]any{
		"mode": "trunk",
		"trunk-tags": []any{map[string]any{
			"id-range": map[string]any{"min": int64(2), "max": int64(4094)},
		}},
	}
}

// untrunkedPorts calls f with every port without a `vlan` key of every
// linux-bridge that is `state: up` (a port with any vlan key, even an
// empty one, is left alone), in document order.
func untrunkedPorts(doc any, f func(bridge string, port map[string]any)) {
	root, ok := doc.(map[string]any)
	if !ok {
		return
	}
	ifaces, _ := root["interfaces"].([]any)
	for _, i := range ifaces {
		iface, ok := i.(map[string]any)
		if !ok || iface["type"] != "linux-bridge" || iface["state"] != "up" {
			continue
		}
		name, _ := iface["name"].(string)
		br, _ := iface["bridge"].(map[string]any)
		ports, _ := br["port"].([]any)
		for _, p := range ports {
			if port, ok := p.(map[string]any); ok {
				if _, has := port["vlan"]; !has {
					f(name, port)
				}
			}
		}
	}
}

// addDefaultBridgeVLANs gives every port without a `vlan` key of every
// linux-bridge that is `state: up` a trunk of VLANs 2-4094 (upstream's
// default, so a bridge passes tagged traffic). doc is modified in place.
func addDefaultBridgeVLANs(doc any) {
	untrunkedPorts(doc, func(_ string, port map[string]any) { port["vlan"] = defaultTrunk() })
}

// defaultTrunkPorts names ("bridge/port") the ports addDefaultBridgeVLANs
// would give the default trunk.
func defaultTrunkPorts(doc any) []string {
	var out []string
	untrunkedPorts(doc, func(bridge string, port map[string]any) {
		name, _ := port["name"].(string)
		out = append(out, bridge+"/"+name)
	})
	return out
}
