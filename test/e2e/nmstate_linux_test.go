package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/test/conformance"
)

// examplesNode is the node the nmstate examples run on.
const examplesNode = "node02"

// nmstateRestore puts the examples' node back as the lab made it: eth1
// and eth2 without addresses or routes, its own hostname.
const nmstateRestore = `
hostname: {config: node02}
routes:
  config:
  - {next-hop-interface: eth1, state: absent}
  - {next-hop-interface: eth2, state: absent}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// TestNmstateExamples runs the scenarios of the conformance table (the
// upstream nmstate example files the kernel engine supports,
// docs/support-matrix.md) through the handler: each step is the desired
// state of a policy for one node, applied with kubectl, Available before
// the next. Scenarios that need Debian's kernel are part of the guest
// mode's run (-tags qemu) only, and that run has only those: the others
// run through the handler on this machine's kernel in make test's
// container stage already. The support matrix's column "through the
// handler" says so.
func TestNmstateExamples(t *testing.T) {
	requirePolicies(t)
	root, err := testenv.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "conformance", conformance.ExamplesDir)
	ran := 0
	for _, s := range conformance.Scenarios {
		// The OVS scenarios need the node's own OVS (the default mode's).
		if s.Known != "" || s.HandlerSkip() != "" || (s.Lane == conformance.QemuLane) != c.fullKernel ||
			s.OVS && c.ovsdb(examplesNode) == "" || s.NoNM != "" && *backend == "networkmanager" {
			continue
		}
		ran++
		ok := t.Run(s.Name, func(t *testing.T) {
			for i, f := range s.Steps {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				// As JSON, a flow mapping: the files' comments and
				// document markers stay out of the policy.
				desired, err := yaml.YAMLToJSON(b)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				policy := fmt.Sprintf("nmstate-%s-%d", s.Name, i+1)
				t.Logf("step %d: %s", i+1, f)
				enact(t, policy, nodePolicyYAML(policy, examplesNode, nil, string(desired)))
				checkNetworkManagerHolds(t, examplesNode, b)
				deletePolicy(t, policy)
			}
			restore(t, "nmstate-"+s.Name, []string{examplesNode}, nmstateRestore)
			if h := strings.TrimSpace(c.lab.MustExec(t, examplesNode, "hostname")); h != examplesNode {
				t.Errorf("hostname %q after the restore, want %s", h, examplesNode)
			}
			if r := c.lab.MustExec(t, examplesNode, "cat", "/etc/resolv.conf"); !strings.Contains(r, "nameserver 192.0.2.1\n") {
				t.Errorf("resolv.conf after the restore lacks the lab's DNS server:\n%s", r)
			}
		})
		if !ok {
			t.Fatalf("scenario %s failed; the scenarios after it would start from an unknown state", s.Name)
		}
	}
	if ran == 0 {
		t.Fatal("no scenario of the conformance table ran")
	}
}

// checkNetworkManagerHolds: on a lab whose nodes run NetworkManager, each
// interface the step wants up is connected through a NetworkManager
// profile of that node (asked with nmcli on the node's bus), so a pass
// cannot come from the kernel alone.
func checkNetworkManagerHolds(t *testing.T, node string, step []byte) {
	t.Helper()
	bus := ""
	for _, n := range c.state.Nodes {
		if n.Name == node {
			bus = n.NetworkManagerBus
		}
	}
	if bus == "" {
		return
	}
	desired, err := nmstate.Decode(step)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, ifc := range desired.Interfaces {
		if ifc.State != "" && ifc.State != nmstate.StateUp {
			continue
		}
		// Through lab exec, as an administrator asks on the node: its
		// nmcli reaches the node's NetworkManager in every lab mode (in
		// guest mode the bus is the guest's).
		out, err := c.lab.Exec(context.Background(), node, "", "nmcli", "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", ifc.Name)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) < 2 || !strings.HasPrefix(lines[0], "100") || lines[1] == "" {
			errs = append(errs, fmt.Errorf("%s: not connected by NetworkManager: %q (%v)", ifc.Name, out, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// nodeResolvConf is the resolver configuration a policy's DNS lands in:
// the node's /etc/resolv.conf, or on a NetworkManager node the file its
// NetworkManager renders.
func nodeResolvConf(t *testing.T, node string) string {
	t.Helper()
	for _, n := range c.state.Nodes {
		if n.Name == node && n.NetworkManagerResolvConf != "" {
			if c.state.Guest != nil {
				// The file is the guest's.
				return c.lab.MustExec(t, node, "sh", "-c", "cat "+n.NetworkManagerResolvConf+" 2>/dev/null || true")
			}
			data, err := os.ReadFile(n.NetworkManagerResolvConf)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return string(data)
		}
	}
	return c.lab.MustExec(t, node, "cat", "/etc/resolv.conf")
}
