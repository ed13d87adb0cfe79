package nmstatectl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// TestPolicyLiveState resolves captures against the live state of a
// namespace when no --current is given, and checks the rendered state
// against the schema.
func TestPolicyLiveState(t *testing.T) {
	node, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, node, "eth1", peer, "eth1p")
	node.AddrAdd(t, "eth1", "192.0.2.10/24")
	node.LinkUp(t, "eth1")

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`capture:
  nic: interfaces.ipv4.address.ip == "192.0.2.10"
desiredState:
  interfaces:
  - name: "{{ capture.nic.interfaces.0.name }}"
    type: ethernet
    mtu: 1400
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "policy", policy, "--netns", node.Path)
	if err != nil {
		t.Fatalf("policy against the live state: %v", err)
	}
	if !strings.Contains(out, "name: eth1\n") || !strings.Contains(out, "mtu: 1400") {
		t.Errorf("rendered state = %q, want eth1 with mtu 1400", out)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`capture:
  nic: interfaces.ipv4.address.ip == "192.0.2.10"
desiredState:
  interfaces:
  - name: "{{ capture.nic.interfaces.0.name }}"
    type: ethernet
    mtu: "lots"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runCLI(t, "policy", bad, "--netns", node.Path)
	if err == nil || !strings.Contains(err.Error(), "interfaces[0].mtu") {
		t.Errorf("schema error in the rendered state: %v, want one naming interfaces[0].mtu", err)
	}
}
