package metrics

import (
	"encoding/json"
	"fmt"

	"github.com/knmstate/knmstate/api/shared"
)

// StateSummary is what the gauges read from a NodeNetworkState's current
// state: each interface's type, and the destinations of the configured and
// of the running routes.
type StateSummary struct {
	InterfaceTypes []string
	ConfigRoutes   []string
	RunningRoutes  []string
}

// summaryDoc is the part of an nmstate document the summary reads, decoded
// leniently (unknown fields ignored), as kubernetes-nmstate does: a state
// the engine would refuse is still counted.
type summaryDoc struct {
	Interfaces []summaryInterface `json:"interfaces,omitempty"`
	Routes     *summaryRoutes     `json:"routes,omitempty"`
}

type summaryInterface struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type,omitempty"`
}

type summaryRoutes struct {
	Config  []summaryRoute `json:"config,omitempty"`
	Running []summaryRoute `json:"running,omitempty"`
}

type summaryRoute struct {
	Destination string `json:"destination,omitempty"`
}

func decodeSummary(s shared.State) (summaryDoc, error) {
	var d summaryDoc
	if s.IsZero() {
		return d, nil
	}
	if err := json.Unmarshal(s.Raw, &d); err != nil {
		return d, fmt.Errorf("current state: %w", err)
	}
	return d, nil
}

// Summarize reads the summary of a current state (empty for no state).
func Summarize(s shared.State) (StateSummary, error) {
	d, err := decodeSummary(s)
	if err != nil {
		return StateSummary{}, err
	}
	var out StateSummary
	for _, i := range d.Interfaces {
		out.InterfaceTypes = append(out.InterfaceTypes, i.Type)
	}
	if d.Routes != nil {
		for _, r := range d.Routes.Config {
			out.ConfigRoutes = append(out.ConfigRoutes, r.Destination)
		}
		for _, r := range d.Routes.Running {
			out.RunningRoutes = append(out.RunningRoutes, r.Destination)
		}
	}
	return out, nil
}

// ReduceState keeps of a current state only what Summarize reads (each
// interface's name and type, each route's destination), as a smaller
// nmstate document: the controller's cache holds NodeNetworkStates reduced
// this way, so the gauges do not cost a copy of every node's full state.
// A state that does not decode is returned unchanged (Summarize then
// reports the error).
func ReduceState(s shared.State) shared.State {
	d, err := decodeSummary(s)
	if err != nil || s.IsZero() {
		return s
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return s
	}
	return shared.State{Raw: raw}
}
