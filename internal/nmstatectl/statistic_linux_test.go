package nmstatectl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// TestStatisticLiveState: without --current the desired state is taken
// against the live state of --netns, so a NIC of that namespace is known
// and one that exists nowhere is an error.
func TestStatisticLiveState(t *testing.T) {
	node, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, node, "eth1", peer, "eth1p")
	node.LinkUp(t, "eth1")
	dir := t.TempDir()

	desired := filepath.Join(dir, "desired.yaml")
	if err := os.WriteFile(desired, []byte(`interfaces:
- name: eth1
  type: ethernet
  lldp: {enabled: true}
  ipv4:
    enabled: true
    address: [{ip: 192.0.2.10, prefix-length: 24}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "st", desired, "--netns", node.Path, "--state-dir", dir)
	if err != nil {
		t.Fatalf("statistic against the live state: %v\n%s", err, out)
	}
	// The stack shows the type the kernel reports: this "NIC" is a veth.
	want := yamlDoc(t, []byte("topology: [static_ip4 -> veth]\nfeatures: [lldp]\n"))
	if diff := cmp.Diff(want, yamlDoc(t, []byte(out))); diff != "" {
		t.Errorf("statistic (-want +got):\n%s", diff)
	}

	// eth1p lives in the peer namespace only.
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("interfaces: [{name: eth1p, type: ethernet, mtu: 1400}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "st", other, "--netns", node.Path, "--state-dir", dir)
	if err == nil || !strings.Contains(out, "eth1p does not exist") {
		t.Errorf("statistic of a NIC outside the namespace: %v\n%s\nwant an error saying eth1p does not exist", err, out)
	}
}
