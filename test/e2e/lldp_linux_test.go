package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// TestLLDPNeighbors: a policy turns LLDP on for eth1 of every node; the
// lab switch's lldpd announces itself, and each node's NodeNetworkState
// then lists it as eth1's neighbour, in nmstate's TLV form (a veth in the
// default lab, a virtio-net NIC in the guest).
func TestLLDPNeighbors(t *testing.T) {
	requirePolicies(t)
	const policy = "e2e-lldp"
	// Deferred, not t.Cleanup: kubectl runs with t.Context.
	defer func() {
		c.kubectl.MustIn(t, policyYAML(policy+"-off", "interfaces:\n- {name: eth1, type: ethernet, state: up, lldp: {enabled: false}}\n"), "apply", "-f", "-")
		if err := policyReaches(t, policy+"-off", "Available", availableTimeout); err != nil {
			t.Error(err)
		}
		deletePolicy(t, policy+"-off")
	}()
	c.kubectl.MustIn(t, policyYAML(policy, "interfaces:\n- {name: eth1, type: ethernet, state: up, lldp: {enabled: true}}\n"), "apply", "-f", "-")
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	deletePolicy(t, policy)
	for _, n := range c.state.Nodes {
		waitLLDPNeighbor(t, n.Name, "eth1")
	}
}

// waitLLDPNeighbor waits until node's NodeNetworkState shows LLDP enabled
// on nic with the lab switch among its neighbours, in nmstate's TLV form.
func waitLLDPNeighbor(t *testing.T, node, nic string) {
	t.Helper()
	suite.Eventually(t, 60*time.Second*c.slowdown, fmt.Sprintf("node %s: the switch as %s's LLDP neighbour in the nns", node, nic), func() error {
		out := c.kubectl.Must(t, "get", "nns", node, "-o", "json")
		var nns struct {
			Status struct {
				CurrentState struct {
					Interfaces []struct {
						Name string `json:"name"`
						LLDP *struct {
							Enabled   bool               `json:"enabled"`
							Neighbors [][]map[string]any `json:"neighbors"`
						} `json:"lldp"`
					} `json:"interfaces"`
				} `json:"currentState"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &nns); err != nil {
			return err
		}
		for _, ifc := range nns.Status.CurrentState.Interfaces {
			if ifc.Name != nic {
				continue
			}
			if ifc.LLDP == nil || !ifc.LLDP.Enabled {
				return errors.New(nic + " lldp not enabled in the nns")
			}
			for _, nb := range ifc.LLDP.Neighbors {
				for _, tlv := range nb {
					if tlv["system-name"] == labnet.LLDPSystemName {
						return nil
					}
				}
			}
			return fmt.Errorf("%s neighbours %v lack %s", nic, ifc.LLDP.Neighbors, labnet.LLDPSystemName)
		}
		return errors.New("no " + nic + " in the nns: " + strings.TrimSpace(out[:min(len(out), 200)]))
	})
}
