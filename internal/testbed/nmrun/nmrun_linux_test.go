package nmrun

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// hostLinks lists the links of this test process's own namespace.
func hostLinks(t *testing.T) []string {
	t.Helper()
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range ls {
		names = append(names, l.Attrs().Name)
	}
	return names
}

// TestStartIsIsolated: the private NetworkManager sees only the
// namespace's links, answers only on the private bus, keeps its files in
// Dir, and the machine's namespace, /run and the machine's bus socket
// path are unchanged.
func TestStartIsIsolated(t *testing.T) {
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw1")
	_, runBefore := os.Stat("/run/NetworkManager")
	linksBefore := hostLinks(t)

	in, err := Start(context.Background(), Options{NetNS: ns.Path, Dir: t.TempDir()})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	out, err := Nmcli(context.Background(), in.Bus, "-t", "-f", "DEVICE", "device")
	if err != nil {
		t.Fatalf("nmcli device: %v\n%s", err, out)
	}
	devices := strings.Fields(out)
	if strings.Join(devices, ",") != "lo,eth1" && strings.Join(devices, ",") != "eth1,lo" {
		t.Errorf("NetworkManager sees devices %v, want only lo and eth1 of the namespace", devices)
	}
	// A profile made through the private instance lands in its run dir.
	if out, err := Nmcli(context.Background(), in.Bus, "connection", "add", "type", "dummy", "ifname", "d0", "con-name", "d0", "save", "no"); err != nil {
		t.Fatalf("nmcli connection add: %v\n%s", err, out)
	}
	if _, err := os.Stat(in.RunDir + "/system-connections/d0.nmconnection"); err != nil {
		t.Errorf("in-memory profile not in the private run directory: %v", err)
	}
	if _, err := os.Stat("/run/NetworkManager"); (err == nil) != (runBefore == nil) {
		t.Errorf("/run/NetworkManager of the machine changed (before: %v, after: %v)", runBefore, err)
	}
	if got := hostLinks(t); strings.Join(got, ",") != strings.Join(linksBefore, ",") {
		t.Errorf("the machine's links changed: %v, before %v", got, linksBefore)
	}

	// Its log is ours (the fresh /run has no syslog socket).
	if data, err := os.ReadFile(in.Log); err != nil || !strings.Contains(string(data), "NetworkManager") {
		t.Errorf("NetworkManager's log %s is empty or unreadable (%v)", in.Log, err)
	}

	// Stopping ends both processes, by PID.
	nmPID, busPID := in.nm.Process.Pid, in.bus.Process.Pid
	if err := in.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{nmPID, busPID} {
		if _, err := os.Stat("/proc/" + itoa(pid) + "/status"); err == nil {
			if data, _ := os.ReadFile("/proc/" + itoa(pid) + "/status"); !strings.Contains(string(data), "State:\tZ") {
				t.Errorf("process %d still runs after Stop", pid)
			}
		}
	}
}

// TestRestartWithRebootForgetsInMemoryProfiles: a restart keeps the
// in-memory profiles (the run directory survives), a "reboot" does not.
func TestRestartWithRebootForgetsInMemoryProfiles(t *testing.T) {
	ns := nstest.New(t)
	in, err := Start(context.Background(), Options{NetNS: ns.Path, Dir: t.TempDir()})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out, err := Nmcli(ctx, in.Bus, "connection", "add", "type", "dummy", "ifname", "d0", "con-name", "d0", "save", "no"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	has := func() bool {
		out, err := Nmcli(ctx, in.Bus, "-t", "-f", "NAME", "connection")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return strings.Contains(out, "d0")
	}
	if err := in.Restart(ctx, false); err != nil {
		t.Fatal(err)
	}
	if !has() {
		t.Errorf("in-memory profile lost by a plain restart")
	}
	if err := in.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Errorf("in-memory profile survived a reboot")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
