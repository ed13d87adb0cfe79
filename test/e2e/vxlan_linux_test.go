package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestVXLANBetweenNodes: node01 and node02 each get vxlan100 (VNI 100,
// UDP 4789) over eth0 with the other node's eth0 address as its remote,
// from a policy of their own applied at once, and reach each other's
// overlay address through it (busybox ping: the nodes of every lab mode
// have it, this machine has no iputils). The same through NetworkManager's vxlan
// profile (-e2e.backend networkmanager).
func TestVXLANBetweenNodes(t *testing.T) {
	requirePolicies(t)
	nodes := []string{"node01", "node02"}
	underlay := map[string]string{}
	for _, n := range nodes {
		addrs := links(t, n)["eth0"].ipv4()
		if len(addrs) == 0 {
			t.Fatalf("%s: eth0 has no IPv4 address to carry the VXLAN", n)
		}
		underlay[n] = strings.Split(addrs[0], "/")[0]
	}
	overlay := map[string]string{"node01": "198.51.100.201", "node02": "198.51.100.202"}
	var policies []string
	defer func() {
		for _, p := range policies {
			deletePolicy(t, p)
		}
		restore(t, "vxlan", nodes, "interfaces:\n- {name: vxlan100, type: vxlan, state: absent}\n")
	}()
	for i, n := range nodes {
		peer := nodes[1-i]
		policy := "vxlan-" + n
		policies = append(policies, policy)
		c.kubectl.MustIn(t, nodePolicyYAML(policy, n, nil, fmt.Sprintf(`
interfaces:
- name: vxlan100
  type: vxlan
  state: up
  vxlan: {base-iface: eth0, id: 100, remote: %s, destination-port: 4789}
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: %s, prefix-length: 24}]
`, underlay[peer], overlay[n])), "apply", "-f", "-")
	}
	for _, p := range policies {
		if err := policyReaches(t, p, "Available", availableTimeout); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		l := links(t, n)["vxlan100"]
		if l.LinkInfo.Kind != "vxlan" || l.LinkInfo.Data["id"] != float64(100) || l.LinkInfo.Data["remote"] != underlay[nodes[1-i]] || l.LinkInfo.Data["port"] != float64(4789) {
			t.Errorf("node %s: vxlan100 is a %q with %v, want a vxlan of VNI 100 to %s:4789", n, l.LinkInfo.Kind, l.LinkInfo.Data, underlay[nodes[1-i]])
		}
		ipv4Is(t, n, "vxlan100", overlay[n]+"/24")
	}
	if out := c.lab.MustExec(t, "node01", "busybox", "ping", "-c", "2", "-W", "10", overlay["node02"]); !strings.Contains(out, "2 packets received") {
		t.Errorf("node01 -> node02 over vxlan100:\n%s", out)
	}
}
