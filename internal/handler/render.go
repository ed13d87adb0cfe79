package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// are not modified. Each input changes form once, into the generic
// document nmpolicy works on, and the rendered document once, into the
// schema's State.
func renderPolicy(spec shared.NodeNetworkConfigurationPolicySpec, current *nmstate.State,
	cache map[string]shared.NodeNetworkConfigurationEnactmentCapturedState, now time.Time, opts renderOptions) (rendered, error) {
	desiredDoc, err := desiredDocument(spec.DesiredState, opts)
	if err != nil {
		return rendered{}, &renderError{err}
	}
	curDoc, err := currentDocument(current)
	if err != nil {
		return rendered{}, &renderError{err}
	}
	cached, err := capturedFromStatus(cache)
	if err != nil {
		return rendered{}, &renderError{err}
	}
	gen, err := nmpolicy.GenerateState(nmpolicy.Policy{Capture: spec.Capture, DesiredState: desiredDoc}, curDoc, cached, now)
	if err != nil {
		return rendered{}, &renderError{err}
	}
	var out rendered
	if out.Captured, err = capturedToStatus(gen.CapturedStates); err != nil {
		return rendered{}, &renderError{err}
	}
	if gen.DesiredState == nil {
		return out, nil
	}
	if opts.DefaultBridgeVLANs {
		addDefaultBridgeVLANs(gen.DesiredState)
	} else {
		out.NoDefaultTrunk = defaultTrunkPorts(gen.DesiredState)
	}
	desired, canon, err := decodeRendered(gen.DesiredState)
	if err != nil {
		return rendered{}, &renderError{err}
	}
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

// desiredDocument is the policy's desired state as a document, with this
// node's values ({{ node... }}) and pool address filled in.
func desiredDocument(desired shared.State, opts renderOptions) (any, error) {
	doc, err := nmpolicy.DecodeDocument(desired.Raw)
	if err != nil {
		return nil, fmt.Errorf("desiredState: %w", err)
	}
	doc, problems := extension.RenderNode(doc, opts.Node)
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = fmt.Errorf("desiredState.%w", p)
		}
		return nil, errors.Join(errs...)
	}
	if opts.Pool != nil {
		return extension.FillPool(doc, opts.Pool, opts.PoolAddr)
	}
	return doc, nil
}

// currentDocument is the node's state as the document captures are
// evaluated against. Through its compact JSON: faster than nmstate.Tree,
// which builds a YAML node tree first (5,000 routes: 18 ms against 32 ms).
func currentDocument(current *nmstate.State) (any, error) {
	raw, err := nmstate.AppendCompactJSON(nil, current)
	if err != nil {
		return nil, fmt.Errorf("encoding the current state: %w", err)
	}
	doc, err := nmpolicy.DecodeDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("current state: %w", err)
	}
	return doc, nil
}

// capturedFromStatus converts the enactment's capture cache into
// nmpolicy's, entry by entry.
func capturedFromStatus(cache map[string]shared.NodeNetworkConfigurationEnactmentCapturedState) (nmpolicy.CapturedStates, error) {
	if len(cache) == 0 {
		return nil, nil
	}
	out := make(nmpolicy.CapturedStates, len(cache))
	for name, c := range cache {
		doc, err := nmpolicy.DecodeDocument(c.State.Raw)
		if err != nil {
			return nil, fmt.Errorf("capturedStates.%s.state: %w", name, err)
		}
		st, ok := doc.(map[string]any)
		if doc != nil && !ok {
			return nil, fmt.Errorf("capturedStates.%s.state: must be a map", name)
		}
		out[name] = nmpolicy.CapturedState{State: st, MetaInfo: nmpolicy.MetaInfo{Version: c.MetaInfo.Version, Time: c.MetaInfo.TimeStamp.Time}}
	}
	return out, nil
}

// capturedToStatus converts nmpolicy's captured states into the
// enactment's capture cache, entry by entry (nil for none).
func capturedToStatus(captured nmpolicy.CapturedStates) (map[string]shared.NodeNetworkConfigurationEnactmentCapturedState, error) {
	if len(captured) == 0 {
		return nil, nil
	}
	out := make(map[string]shared.NodeNetworkConfigurationEnactmentCapturedState, len(captured))
	for name, c := range captured {
		var st shared.State
		if len(c.State) > 0 {
			raw, err := json.Marshal(c.State)
			if err != nil {
				return nil, fmt.Errorf("capturedStates.%s.state: %w", name, err)
			}
			st = shared.State{Raw: raw}
		}
		out[name] = shared.NodeNetworkConfigurationEnactmentCapturedState{
			State:    st,
			MetaInfo: shared.NodeNetworkConfigurationEnactmentMetaInfo{Version: c.MetaInfo.Version, TimeStamp: metav1.NewTime(c.MetaInfo.Time)},
		}
	}
	return out, nil
}

// decodeRendered decodes the rendered document into the schema's State,
// validates it, and returns it with its canonical compact JSON (the
// enactment's status.desiredState).
func decodeRendered(doc any) (*nmstate.State, []byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("desiredState: %w", err)
	}
	desired, err := nmstate.Decode(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := nmstate.Validate(desired, nil).Err(); err != nil {
		return nil, nil, err
	}
	canon, err := nmstate.AppendCompactJSON(nil, desired)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding desiredState: %w", err)
	}
	return desired, canon, nil
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
