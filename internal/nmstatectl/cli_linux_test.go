package nmstatectl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// nmstatectlBin and knmstateBin are the binaries built once for the CLI
// tests: the watchdog must be a real process that outlives the command.
// linkBin is an nmstatectl symlink to knmstateBin, as in the image.
var nmstatectlBin, knmstateBin, linkBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "nmstatectl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nmstatectlBin, knmstateBin = filepath.Join(dir, "nmstatectl"), filepath.Join(dir, "knmstate")
	for bin, pkg := range map[string]string{nmstatectlBin: "../../cmd/nmstatectl", knmstateBin: "../../cmd/knmstate"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	linkBin = filepath.Join(dir, "link", "nmstatectl")
	if err := os.Mkdir(filepath.Dir(linkBin), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Symlink(knmstateBin, linkBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// cliNode is a namespace with a "NIC" eth1, a private resolv.conf and
// state directory, driven through the nmstatectl binary.
type cliNode struct {
	ns               *nstest.NS
	resolv, stateDir string
	// nmstatectl is the command line of nmstatectl: nmstatectlBin unless
	// a test runs it another way.
	nmstatectl []string
}

func newCLINode(t *testing.T) *cliNode {
	t.Helper()
	node, sw := nstest.New(t), nstest.New(t)
	dir := t.TempDir()
	n := &cliNode{ns: node, resolv: filepath.Join(dir, "resolv.conf"), stateDir: filepath.Join(dir, "state"),
		nmstatectl: []string{nmstatectlBin}}
	// Registered before anything can start a watchdog: stop any that is
	// still running when the test ends.
	t.Cleanup(func() { n.stopWatchdogs(t) })
	nstest.Veth(t, node, "eth1", sw, "sw-eth1")
	if err := os.WriteFile(n.resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// run runs nmstatectl against the node and returns stdout, stderr and the
// exit status.
func (n *cliNode) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	full := append(append(n.nmstatectl[1:len(n.nmstatectl):len(n.nmstatectl)],
		"--netns", n.ns.Name, "--resolv-conf", n.resolv, "--state-dir", n.stateDir), args...)
	cmd := exec.Command(n.nmstatectl[0], full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("running nmstatectl %v: %v", args, err)
	return "", "", -1
}

// mustRun runs nmstatectl and fails the test unless it exits 0.
func (n *cliNode) mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := n.run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("nmstatectl %v: exit %d\nstderr:\n%s", args, code, errOut)
	}
	return out
}

// show is the node's state as nmstatectl prints it, minus the bridge
// timers that count down by themselves.
func (n *cliNode) show(t *testing.T) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(n.mustRun(t, "", "show"), "\n") {
		if strings.Contains(l, "gc-timer:") || strings.Contains(l, "hello-timer:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// stopWatchdogs kills watchdog processes of this node's state directory
// that are still alive (identified by their pid file and command line).
func (n *cliNode) stopWatchdogs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(n.stateDir, "watchdog-*.pid"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(watchdogVerb)) || !bytes.Contains(cmdline, []byte(n.stateDir)) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("stopping watchdog %d: %v", pid, err)
		}
	}
}

// waitFor polls cond until it holds or a generous limit passes; the limit
// only bounds a broken test, it asserts nothing about speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (n *cliNode) recordExists() bool {
	_, err := os.Stat(filepath.Join(n.stateDir, "checkpoint.json"))
	return err == nil
}

// cliBridge puts the NIC (with a new MTU) into a new bridge with an
// address, a route through it and DNS.
const cliBridge = `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address:
    - {ip: 192.0.2.1, prefix-length: 24}
  bridge:
    options: {stp: {enabled: false}}
    port: [{name: eth1}]
- name: eth1
  mtu: 1400
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-address: 192.0.2.254
    next-hop-interface: br0
dns-resolver:
  config:
    server: [192.0.2.99]
`

func TestCLIApplyShowsAppliedStateAndCommits(t *testing.T) {
	n := newCLINode(t)
	out := n.mustRun(t, cliBridge, "apply")
	if !strings.Contains(out, "name: br0") {
		t.Errorf("apply output does not show the applied state:\n%s", out)
	}
	if n.recordExists() {
		t.Error("checkpoint record left after a committed apply")
	}
	shown := n.mustRun(t, "", "show", "br0")
	for _, want := range []string{"name: br0", "ip: 192.0.2.1", "destination: 198.51.100.0/24"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show br0 lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "\n  - name: eth1\n") {
		t.Errorf("show br0 lists eth1:\n%s", shown)
	}
	var doc struct {
		Interfaces []struct {
			Name string `json:"name"`
			MTU  int    `json:"mtu"`
		} `json:"interfaces"`
	}
	if err := json.Unmarshal([]byte(n.mustRun(t, "", "show", "--json", "eth1")), &doc); err != nil {
		t.Fatalf("show --json eth1: %v", err)
	}
	if len(doc.Interfaces) != 1 || doc.Interfaces[0].Name != "eth1" || doc.Interfaces[0].MTU != 1400 {
		t.Errorf("show --json eth1 = %+v, want eth1 with mtu 1400", doc.Interfaces)
	}
	resolv, err := os.ReadFile(n.resolv)
	if err != nil || !strings.Contains(string(resolv), "192.0.2.99") {
		t.Errorf("resolv.conf = %q, %v; want the applied server", resolv, err)
	}
	// Applying the same state again changes nothing.
	if plan := n.mustRun(t, cliBridge, "apply", "--dry-run"); plan != "" {
		t.Errorf("dry run after apply plans changes:\n%s", plan)
	}
}

func TestCLIDryRunPrintsPlanAndChangesNothing(t *testing.T) {
	n := newCLINode(t)
	before := n.show(t)
	plan := n.mustRun(t, cliBridge, "apply", "--dry-run")
	if !strings.Contains(plan, "br0") {
		t.Errorf("dry-run plan does not mention br0:\n%s", plan)
	}
	if diff := cmp.Diff(before, n.show(t)); diff != "" {
		t.Errorf("dry run changed the node (-before +after):\n%s", diff)
	}
}

func TestCLIInvalidStateExitsOneWithPath(t *testing.T) {
	n := newCLINode(t)
	before := n.show(t)
	_, errOut, code := n.run(t, "interfaces:\n- name: br0\n  type: linux-bridge\n  mtu: 70000000000000000000\n", "apply")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if !strings.HasPrefix(errOut, "interfaces[0].mtu: ") {
		t.Errorf("stderr does not start with the path:\n%s", errOut)
	}
	if diff := cmp.Diff(before, n.show(t)); diff != "" {
		t.Errorf("invalid apply changed the node (-before +after):\n%s", diff)
	}
}

func TestCLINoCommitThenCommit(t *testing.T) {
	n := newCLINode(t)
	n.mustRun(t, cliBridge, "apply", "--no-commit")
	if !n.recordExists() {
		t.Fatal("no checkpoint record after apply --no-commit")
	}
	// One pending checkpoint at a time.
	_, errOut, code := n.run(t, cliBridge, "apply")
	if code != 1 || !strings.Contains(errOut, "another checkpoint exists") {
		t.Errorf("second apply: exit %d, stderr %q; want 1 and \"another checkpoint exists\"", code, errOut)
	}
	id := strings.TrimSpace(n.mustRun(t, "", "commit"))
	if id == "" {
		t.Error("commit printed no checkpoint id")
	}
	if n.recordExists() {
		t.Error("checkpoint record left after commit")
	}
	if !strings.Contains(n.mustRun(t, "", "show", "br0"), "name: br0") {
		t.Error("br0 gone after commit")
	}
	if _, _, code := n.run(t, "", "commit"); code != 1 {
		t.Errorf("commit without checkpoint: exit %d, want 1", code)
	}
}

func TestCLINoCommitThenRollback(t *testing.T) {
	n := newCLINode(t)
	before := n.show(t)
	n.mustRun(t, cliBridge, "apply", "--no-commit")
	n.mustRun(t, "", "rollback")
	if diff := cmp.Diff(before, n.show(t)); diff != "" {
		t.Errorf("rollback did not restore the node (-before +after):\n%s", diff)
	}
	if n.recordExists() {
		t.Error("checkpoint record left after rollback")
	}
}

// TestCLICheckpointExpiresAndRollsBackWithoutNmstatectl, also for knmstate
// as nmstatectl: its watchdog runs the knmstate executable, which needs
// the nmstatectl subcommand even when invoked through the symlink.
func TestCLICheckpointExpiresAndRollsBackWithoutNmstatectl(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nmstatectl []string
	}{
		{"nmstatectl", []string{nmstatectlBin}},
		{"knmstate nmstatectl", []string{knmstateBin, "nmstatectl"}},
		{"symlink", []string{linkBin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newCLINode(t)
			n.nmstatectl = tc.nmstatectl
			before := n.show(t)
			n.mustRun(t, cliBridge, "apply", "--no-commit", "--timeout", "2")
			// nmstatectl has exited; only the detached watchdog can undo the apply.
			if !strings.Contains(n.mustRun(t, "", "show", "br0"), "name: br0") {
				t.Fatal("apply --no-commit did not create br0")
			}
			waitFor(t, "the watchdog to roll back", func() bool { return !n.recordExists() })
			if diff := cmp.Diff(before, n.show(t)); diff != "" {
				t.Errorf("expired checkpoint did not restore the node (-before +after):\n%s", diff)
			}
			logs, _ := filepath.Glob(filepath.Join(n.stateDir, "watchdog-*.log"))
			var text []byte
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				text = append(text, b...)
			}
			if !bytes.Contains(text, []byte("rolled back")) {
				t.Errorf("watchdog log does not report the rollback: %q", text)
			}
		})
	}
}

func TestCLIFailedApplyRollsBackAndExitsOne(t *testing.T) {
	n := newCLINode(t)
	before := n.show(t)
	// br0 and its address are created, then the kernel refuses the route:
	// its gateway is on no connected network.
	failing := strings.Replace(cliBridge, "routes:\n  config:\n",
		"routes:\n  config:\n  - destination: 10.20.0.0/16\n    next-hop-address: 10.99.99.1\n    next-hop-interface: br0\n", 1)
	_, errOut, code := n.run(t, failing, "apply")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	for _, want := range []string{"10.20.0.0/16", "network is unreachable", "rolled back checkpoint"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if diff := cmp.Diff(before, n.show(t)); diff != "" {
		t.Errorf("failed apply changed the node (-before +after):\n%s", diff)
	}
	if n.recordExists() {
		t.Error("checkpoint record left after a failed apply")
	}
}
