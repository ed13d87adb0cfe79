//go:build kubelet

package faults

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

type (
	policy    = nmstatev1.NodeNetworkConfigurationPolicy
	enactment = nmstatev1beta1.NodeNetworkConfigurationEnactment
)

// What the two policies of a case do. The good one makes a bridge with an
// address, on every node alike. The bad one routes the API server's
// address through relay: on most nodes relay is the switch itself (a
// second address of its bridge) and the route works; on badNodes relay's
// neighbour entry is a MAC nobody has, so after the apply the node
// reaches neither the API server, nor its DNS server, nor its gateway:
// the probes fail and the change must be rolled back. Both states are
// the node's own, so "before" is easy to tell from "desired" with show.
const (
	goodBridge  = "fgood"
	goodAddress = "10.250.0.1"
	apiAddress  = "192.0.2.1"
	relay       = "192.0.2.250"
	badMAC      = "02:00:00:00:02:50"
	// testPause gives each apply a window between change and commit that
	// a case can hit (knmstate.io/test-pause-before-probes).
	testPause = "3s"
)

// badNodes are where the bad policy must roll back: a worker in the
// middle and the last one, so permits in name order meet good nodes first.
var badNodes = []string{"node03", "node05"}

const goodState = `
interfaces:
- name: ` + goodBridge + `
  type: linux-bridge
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address:
    - ip: ` + goodAddress + `
      prefix-length: 24
  bridge:
    port: []
`

const badState = `
routes:
  config:
  - destination: ` + apiAddress + `/32
    next-hop-address: ` + relay + `
    next-hop-interface: eth0
`

// prepareBadNodes gives the switch the relay address and badNodes their
// broken neighbour entry for it.
func (s *fixture) prepareBadNodes(ctx context.Context) error {
	if err := s.inSwitch(ctx, "ip", "addr", "replace", relay+"/24", "dev", "br0"); err != nil {
		return err
	}
	for _, n := range badNodes {
		if _, err := s.lab.Exec(ctx, n, "", "ip", "neigh", "replace", relay, "lladdr", badMAC, "dev", "eth0", "nud", "permanent"); err != nil {
			return err
		}
	}
	return nil
}

// newPolicy is a policy for every node (or the selected ones) with
// maxUnavailable 2 and the test pause.
func newPolicy(name, state string, selector map[string]string, pause bool) (*policy, error) {
	p := &policy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if pause {
		p.Annotations = map[string]string{extension.TestPauseAnnotation: testPause}
	}
	mu := intstr.FromInt32(maxUnavailable)
	p.Spec.MaxUnavailable = &mu
	p.Spec.NodeSelector = selector
	st, err := shared.NewState([]byte(state))
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	p.Spec.DesiredState = st
	return p, nil
}

// reset deletes every policy, waits until their enactments are gone and
// takes what the policies left off the nodes (deleting a policy keeps its
// configuration, as upstream's does).
func (s *fixture) reset(ctx context.Context) error {
	if err := s.c.DeleteAllOf(ctx, &policy{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the policies: %w", err)
	}
	err := suite.Until(ctx, 3*time.Minute, 300*time.Millisecond, func() error {
		var ps nmstatev1.NodeNetworkConfigurationPolicyList
		var es nmstatev1beta1.NodeNetworkConfigurationEnactmentList
		err := errors.Join(s.c.List(ctx, &ps), s.c.List(ctx, &es))
		if err == nil && len(ps.Items) == 0 && len(es.Items) == 0 {
			return nil
		}
		return fmt.Errorf("%d policies, %d enactments (%v)", len(ps.Items), len(es.Items), err)
	})
	if err != nil {
		return fmt.Errorf("policies and enactments not gone after reset: %w", err)
	}
	for _, n := range s.nodes {
		out, err := s.lab.Exec(ctx, n, "", "ip", "-o", "link", "show", "type", "bridge")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, "fb") || name == goodBridge {
				if _, err := s.lab.Exec(ctx, n, "", "ip", "link", "del", name); err != nil {
					return err
				}
			}
		}
		out, err = s.lab.Exec(ctx, n, "", "ip", "route", "show", apiAddress+"/32")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			if _, err := s.lab.Exec(ctx, n, "", "ip", "route", "del", apiAddress+"/32"); err != nil {
				return err
			}
		}
	}
	return nil
}

// liveState is what `nmstatectl show` on a node says about the two
// policies' objects.
type liveState struct {
	goodBridge bool // fgood exists with its address
	badRoute   bool // the API server's route through relay
}

func (s *fixture) live(ctx context.Context, node string) (liveState, error) {
	out, err := s.lab.Exec(ctx, node, "", s.knmstate, "nmstatectl", "show")
	if err != nil {
		return liveState{}, err
	}
	var st struct {
		Interfaces []struct {
			Name string `json:"name"`
			IPv4 struct {
				Address []struct {
					IP string `json:"ip"`
				} `json:"address"`
			} `json:"ipv4"`
		} `json:"interfaces"`
		Routes struct {
			Running []struct {
				Destination string `json:"destination"`
				NextHop     string `json:"next-hop-address"`
			} `json:"running"`
		} `json:"routes"`
	}
	if err := yaml.Unmarshal([]byte(out), &st); err != nil {
		return liveState{}, fmt.Errorf("nmstatectl show on %s: %w", node, err)
	}
	var l liveState
	for _, i := range st.Interfaces {
		if i.Name == goodBridge && slices.ContainsFunc(i.IPv4.Address, func(a struct {
			IP string `json:"ip"`
		}) bool {
			return a.IP == goodAddress
		}) {
			l.goodBridge = true
		}
	}
	for _, r := range st.Routes.Running {
		if r.Destination == apiAddress+"/32" && r.NextHop == relay {
			l.badRoute = true
		}
	}
	return l, nil
}

// phase is an enactment's state for the policy's generation gen.
func phase(e *enactment, gen int64) string {
	if e.Status.PolicyGeneration != gen {
		return "Stale"
	}
	l := e.Status.Conditions
	is := func(t shared.ConditionType) bool {
		c := l.Find(t)
		return c != nil && c.Status == "True"
	}
	switch {
	case is(shared.NodeNetworkConfigurationEnactmentConditionAborted):
		return "Aborted"
	case is(shared.NodeNetworkConfigurationEnactmentConditionAvailable):
		return "Available"
	case is(shared.NodeNetworkConfigurationEnactmentConditionFailing) && is(shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return "Retrying"
	case is(shared.NodeNetworkConfigurationEnactmentConditionFailing):
		return "Failed"
	case is(shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return "Progressing"
	case is(shared.NodeNetworkConfigurationEnactmentConditionPending):
		return "Pending"
	}
	return "Unknown"
}

// applying says whether a phase counts against maxUnavailable.
func applying(ph string) bool { return ph == "Progressing" || ph == "Retrying" }

// terminal says whether a phase ends a rollout on its node.
func terminal(ph string) bool { return ph == "Available" || ph == "Failed" || ph == "Aborted" }

// enactmentsOf lists the policy's enactments.
func (s *fixture) enactmentsOf(ctx context.Context, name string) ([]enactment, error) {
	var l nmstatev1beta1.NodeNetworkConfigurationEnactmentList
	if err := s.c.List(ctx, &l, client.MatchingLabels{shared.EnactmentPolicyLabel: name}); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// enactments lists every enactment, by policy.
func (s *fixture) enactments(ctx context.Context) (map[string][]enactment, error) {
	var l nmstatev1beta1.NodeNetworkConfigurationEnactmentList
	if err := s.c.List(ctx, &l); err != nil {
		return nil, err
	}
	out := map[string][]enactment{}
	for _, e := range l.Items {
		p := e.Labels[shared.EnactmentPolicyLabel]
		out[p] = append(out[p], e)
	}
	return out, nil
}

func execCommand(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
