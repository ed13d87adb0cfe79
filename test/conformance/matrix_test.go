//go:build !qemu

// The support matrix lives outside testdata, which the qemu lane does not
// copy, so this test runs on the host only.

package conformance

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/support-matrix.md from the table")

const matrixPath = "../../docs/support-matrix.md"

// fileSupport is what the matrix says about one example file.
type fileSupport struct {
	file      string
	lane      Lane // when supported
	scenarios []string
	needs     []string
	reason    string // "" when supported
	ovs       bool   // needs Open vSwitch
	// notThroughHandler is why no scenario with the file runs through
	// the handler ("" = one does): a NIC kind the lab's nodes do not
	// have, a daemon, a clash with the lab's network.
	notThroughHandler string
	throughHandler    bool
	// nm is where a scenario with the file runs through the
	// NetworkManager backend (its lane; -1 = none) and noNM why not.
	nm   Lane
	noNM string
	// nmBy is the test that runs the file's scenario through
	// NetworkManager when the generic runs do not (Scenario.NMBy).
	nmBy string
}

// classify turns the scenario table into one row per example file: a file
// is supported on the host when a host scenario without a known issue
// applies it, else in the qemu lane when a qemu scenario does; otherwise
// the known issue or the unsupported reason says why not.
func classify() []fileSupport {
	byFile := map[string]*fileSupport{}
	get := func(f string) *fileSupport {
		if byFile[f] == nil {
			byFile[f] = &fileSupport{file: f, lane: -1, nm: -1}
		}
		return byFile[f]
	}
	for _, s := range Scenarios {
		if s.Known != "" {
			continue
		}
		for _, f := range s.Steps {
			fs := get(f)
			fs.ovs = fs.ovs || s.OVS
			if why := s.HandlerSkip(); why == "" {
				fs.throughHandler = true
			} else {
				fs.notThroughHandler = why
			}
			if fs.lane == -1 || s.Lane < fs.lane {
				fs.lane = s.Lane
			}
			switch why := s.nmSkip(); {
			case why == "" && (fs.nm == -1 || s.Lane < fs.nm):
				fs.nm, fs.nmBy = s.Lane, s.NMBy
			case why != "" && fs.noNM == "":
				fs.noNM = why
			}
			fs.scenarios = append(fs.scenarios, fmt.Sprintf("%s (%s: %s)", s.Name, s.Lane, strings.Join(s.Steps, " → ")))
			if !contains(fs.needs, s.Needs) {
				fs.needs = append(fs.needs, s.Needs)
			}
		}
	}
	for _, s := range Scenarios {
		if s.Known == "" {
			continue
		}
		for _, f := range s.Steps {
			if fs := get(f); fs.lane == -1 && fs.reason == "" {
				fs.reason = s.Known
			}
		}
	}
	for f, why := range Unsupported {
		get(f).reason = why
	}
	var out []fileSupport
	for _, fs := range byFile {
		out = append(out, *fs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].file < out[j].file })
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// nmSkip is why the NetworkManager backend's conformance tests do not
// pass s ("" = they do): TestHostExamplesNetworkManager,
// TestOVSExamplesNetworkManager and TestQemuExamplesNetworkManager.
func (s Scenario) nmSkip() string {
	switch {
	case s.NoNM != "":
		return s.NoNM
	case s.NMBy != "":
		return "" // supported: run by s.NMBy
	case s.NMKnown != "":
		return s.NMKnown
	case s.Lane == QemuLane && s.OVS:
		return "the qemu lane runs OVS scenarios on the OVS backend only"
	case s.NIC != "":
		return "eth1 is a " + s.NIC + " NIC, which only the kernel backend's conformance node has (pkg/backend/nm TestSRIOVOnNetdevsimThroughNetworkManager covers SR-IOV through NetworkManager)"
	}
	return ""
}

// throughNM is the matrix's NetworkManager backend column.
func throughNM(r fileSupport) string {
	switch {
	case r.nm == -1:
		return "no: " + r.noNM
	case r.nmBy != "":
		return "yes: host, by `" + r.nmBy + "`"
	case r.ovs:
		return "yes: host (NetworkManager's OVS plugin)"
	case r.nm == HostLane:
		return "yes: host and qemu lane"
	}
	return "yes: qemu lane"
}

// ovsThroughHandler is the handler column of the OVS scenarios.
const ovsThroughHandler = "yes: `lab` (each node its own OVS)"

// throughHandler says where a supported file also runs through the API,
// the controller and the handler into a lab node's kernel: test/e2e's
// TestNmstateExamples applies every scenario of the table as policies,
// host scenarios on both lab modes, qemu lane scenarios in guest mode.
func throughHandler(r fileSupport) string {
	if !r.throughHandler {
		return "no: " + r.notThroughHandler
	}
	if r.ovs {
		return ovsThroughHandler
	}
	if r.lane == HostLane {
		return "yes: `lab` and `lab --kernel debian`"
	}
	return "yes: `lab --kernel debian`"
}

func countOVS(rs []fileSupport) int {
	n := 0
	for _, r := range rs {
		if r.ovs {
			n++
		}
	}
	return n
}

// renderMatrix prints docs/support-matrix.md.
func renderMatrix() []byte {
	rows := classify()
	var host, qemu, not []fileSupport
	for _, r := range rows {
		switch {
		case r.reason != "":
			not = append(not, r)
		case r.lane == HostLane:
			host = append(host, r)
		default:
			qemu = append(qemu, r)
		}
	}
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("<!-- Generated by `go test ./test/conformance -update` from test/conformance/table.go; do not edit. -->\n\n")
	w("# Kernel engine support matrix\n\n")
	w("Which of nmstate's %d example files (`examples/*.yml`, copied unmodified into\n", len(rows))
	w("`test/conformance/testdata/nmstate-examples/`) knmstate's kernel engine applies.\n")
	w("Each supported file is applied with `pkg/apply` in a fresh network namespace whose\n")
	w("`eth1` and `eth2` are veths to a peer namespace (as in upstream's test bed), verified\n")
	w("against a fresh read of the kernel, checked for the fixed point (planning it again\n")
	w("gives an empty plan) and undone by the cleanup files of its scenario, in order.\n\n")
	w("**Through the handler**: the same scenarios also run end to end (`test/e2e`,\n")
	w("`TestNmstateExamples`): each step is the desired state of a\n")
	w("NodeNetworkConfigurationPolicy for one lab node, applied with kubectl, enacted by the\n")
	w("handler into the node's kernel and Available before the next step; the node's NICs,\n")
	w("hostname and default route are then as the lab made them. Host scenarios run on this\n")
	w("machine's kernel (`make test`: `lab`), qemu lane scenarios in guest mode (`make\n")
	w("test-kernel`: `lab --kernel debian`, the nodes on Debian's kernel in a qemu guest).\n\n")
	w("**Open vSwitch**: the OVS scenarios (`TestOVSExamples`) give the node its own\n")
	w("`ovsdb-server` and `ovs-vswitchd` (Debian's `openvswitch-switch`; the vswitchd in the\n")
	w("node's namespace, every file in a temp dir) with the userspace datapath\n")
	w("(`datapath_type=netdev`: this kernel has no openvswitch module) on the host, apply through the\n")
	w("OVS backend (OVSDB merged with the kernel), and check each step with `ovs-vsctl`\n")
	w("(bridges, ports, bond members and modes, port VLANs, STP, internal and patch\n")
	w("interfaces, the datapath) besides netlink. The qemu lane (`make test-kernel`) runs them\n")
	w("on the kernel datapath: its initramfs carries Debian's OVS programs and the openvswitch\n")
	w("module is loaded.\n\n")
	handler, nm := 0, 0
	for _, r := range append(append([]fileSupport{}, host...), qemu...) {
		if r.throughHandler {
			handler++
		}
		if r.nm != -1 {
			nm++
		}
	}
	w("Summary: %d supported on the host kernel (%d of them with Open vSwitch), %d supported\n", len(host), countOVS(host), len(qemu))
	w("in the qemu lane (`make test-kernel`, Debian's full kernel), %d of them through the handler; %d not yet supported.\n", handler, len(not))
	w("Of the %d supported on the kernel backend, %d are supported on the NetworkManager backend too\n", len(host)+len(qemu), nm)
	w("(column *NetworkManager backend*: the same scenarios and checks through `pkg/backend/nm` and a\n")
	w("private NetworkManager 1.42 per node, plus NetworkManager's own view of each interface:\n")
	w("`TestHostExamplesNetworkManager`, `TestOVSExamplesNetworkManager`, and in the qemu lane\n")
	w("`TestQemuExamplesNetworkManager`; the host scenarios run in the qemu lane as well).\n\n")
	section := func(title, intro string, rs []fileSupport) {
		w("## %s (%d)\n\n%s\n\n", title, len(rs), intro)
		w("| File | Scenarios (steps in order) | Kernel features | Through the handler | NetworkManager backend |\n|---|---|---|---|---|\n")
		for _, r := range rs {
			w("| `%s` | %s | %s | %s | %s |\n", r.file, strings.Join(r.scenarios, "; "), strings.Join(r.needs, "; "), throughHandler(r), throughNM(r))
		}
		w("\n")
	}
	section("Supported (host)", "Run by `go test ./test/conformance` on the development kernel (and in the qemu lane too).", host)
	section("Supported (qemu lane)", "Need kernel features the development VM lacks; run by `make test-kernel`\n(`test/conformance/*_qemu_test.go`).", qemu)
	w("The qemu lane also applies kubernetes-nmstate's `docs/examples/bond-vlan.yaml`\n")
	w("(`spec.desiredState`, with static addresses instead of DHCP) and removes it again;\n")
	w("`test/e2e` applies every kubernetes-nmstate example of `examples/` through the handler,\n")
	w("bond, bond-vlan, vlan, vrf and linux-bridge-vlan on Debian's kernel (`lab --kernel debian`).\n\n")
	w("## Not yet supported (%d)\n\n| File | Reason |\n|---|---|\n", len(not))
	for _, r := range not {
		w("| `%s` | %s |\n", r.file, r.reason)
	}
	return b.Bytes()
}

// TestSupportMatrixIsCurrent fails when docs/support-matrix.md differs
// from what the table gives; -update rewrites it.
func TestSupportMatrixIsCurrent(t *testing.T) {
	want := renderMatrix()
	if *update {
		if err := os.WriteFile(matrixPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(matrixPath)
	if err != nil {
		t.Fatalf("%v (run go test ./test/conformance -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale; run go test ./test/conformance -update (-want +got):\n%s", matrixPath, diff)
	}
}
