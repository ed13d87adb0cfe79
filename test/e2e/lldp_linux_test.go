package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
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
		kubectlIn(t, policyYAML(policy+"-off", "interfaces:\n- {name: eth1, type: ethernet, state: up, lldp: {enabled: false}}\n"), "apply", "-f", "-")
		if err := waitFor(t, policy+"-off", "Available", availableTimeout); err != nil {
			t.Error(err)
		}
		deletePolicy(t, policy+"-off")
	}()
	kubectlIn(t, policyYAML(policy, "interfaces:\n- {name: eth1, type: ethernet, state: up, lldp: {enabled: true}}\n"), "apply", "-f", "-")
	if err := waitFor(t, policy, "Available", availableTimeout); err != nil {
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
	eventually(t, 60*time.Second, fmt.Sprintf("node %s: the switch as %s's LLDP neighbour in the nns", node, nic), func() string {
		out := kubectl(t, "get", "nns", node, "-o", "json")
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
			return err.Error()
		}
		for _, ifc := range nns.Status.CurrentState.Interfaces {
			if ifc.Name != nic {
				continue
			}
			if ifc.LLDP == nil || !ifc.LLDP.Enabled {
				return nic + " lldp not enabled in the nns"
			}
			for _, nb := range ifc.LLDP.Neighbors {
				for _, tlv := range nb {
					if tlv["system-name"] == labnet.LLDPSystemName {
						return ""
					}
				}
			}
			return fmt.Sprintf("%s neighbours %v lack %s", nic, ifc.LLDP.Neighbors, labnet.LLDPSystemName)
		}
		return "no " + nic + " in the nns: " + strings.TrimSpace(out[:min(len(out), 200)])
	})
}
