package nm_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
)

// profilesOf lists NetworkManager's profiles of iface as "name type".
func (e *env) profilesOf(t *testing.T, iface string) []string {
	t.Helper()
	out, err := nmrun.Nmcli(context.Background(), e.nm.Bus, "-g", "NAME,TYPE,DEVICE", "connection", "show")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var ps []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 3 && (f[0] == iface || strings.HasPrefix(f[0], iface+"-")) {
			ps = append(ps, f[0]+" "+f[1])
		}
	}
	slices.Sort(ps)
	return ps
}

// reboot is what a reboot leaves: NetworkManager stopped, the kernel
// without br0 and eth1's address, /run emptied, NetworkManager started.
func (e *env) reboot(t *testing.T) {
	t.Helper()
	if err := e.nm.StopNM(); err != nil {
		t.Fatal(err)
	}
	if l, err := e.ns.Netlink.LinkByName("br0"); err == nil {
		if err := e.ns.Netlink.LinkDel(l); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := e.ns.Netlink.LinkByName("eth1"); err == nil {
		addrs, _ := e.ns.Netlink.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			_ = e.ns.Netlink.AddrDel(l, &a)
		}
	}
	if err := e.nm.Restart(context.Background(), true); err != nil {
		t.Fatal(err)
	}
}

func (e *env) br0Up() bool {
	return waitFor(10*time.Second, func() bool {
		l, err := e.ns.Netlink.LinkByName("br0")
		if err != nil {
			return false
		}
		addrs, _ := e.ns.Netlink.AddrList(l, netlink.FAMILY_V4)
		return len(addrs) == 1
	})
}

// TestPersistByDefaultMemoryOnlyOnRequest: by default, as upstream's
// nmstatectl, profiles are written to the keyfile directory, the other
// profiles of an interface and type go (an "eth1-old" made with nmcli),
// a reboot brings the configuration back and state absent deletes the
// profiles. MemoryOnly (nmstate's --memory-only) writes nothing there,
// keeps the other profiles, turns absent into down without deleting a
// profile, and a reboot loses the configuration.
func TestPersistByDefaultMemoryOnlyOnRequest(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(map[bool]string{false: "memory-only", true: "default"}[persist], func(t *testing.T) {
			e := newEnv(t)
			b := e.open(t, persist)
			ctx := context.Background()
			for _, name := range []string{"eth1-a", "eth1-b"} {
				if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "connection", "add", "type", "ethernet", "ifname", "eth1", "con-name", name,
					"autoconnect", "no", "ipv4.method", "disabled", "ipv6.method", "disabled"); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			}
			if _, err := apply.Apply(ctx, b, decode(t, bridgeAndAddress), apply.Options{StateDir: e.stateDir}); err != nil {
				t.Fatal(err)
			}
			onDisk, _ := filepath.Glob(filepath.Join(e.nm.KeyfileDir, "[be]*"))
			inRun, _ := filepath.Glob(filepath.Join(e.nm.RunDir, "system-connections", "[be]*.nmconnection"))
			// The apply updates one of nmcli's two eth1 profiles.
			if persist && len(onDisk) != 2 || !persist && len(onDisk) != 2 {
				t.Errorf("keyfile directory holds %v, want br0's and eth1's profiles (persist) or nmcli's two of eth1", onDisk)
			}
			if !persist && len(inRun) != 2 {
				t.Errorf("run directory holds %v, want the two in-memory profiles", inRun)
			}
			if got := e.profilesOf(t, "eth1"); persist && len(got) != 1 || !persist && len(got) != 2 {
				t.Errorf("eth1's profiles %v, want one (persist: the others deleted) or both of nmcli's (memory-only)", got)
			}

			e.reboot(t)
			up := e.br0Up()
			if persist && !up {
				t.Errorf("persistent br0 did not come back after the reboot")
			}
			if !persist {
				if up {
					t.Errorf("in-memory br0 came back after the reboot")
				}
				if _, err := os.Stat(filepath.Join(e.nm.RunDir, "system-connections", "br0.nmconnection")); err == nil {
					t.Errorf("in-memory profile still in the run directory")
				}
				return
			}

			// Absent removes br0 and every profile of it.
			if _, err := apply.Apply(ctx, b, decode(t, "interfaces: [{name: br0, type: linux-bridge, state: absent}]"), apply.Options{StateDir: e.stateDir}); err != nil {
				t.Fatal(err)
			}
			if got := e.profilesOf(t, "br0"); len(got) != 0 {
				t.Errorf("br0's profiles after absent: %v", got)
			}
			if _, err := e.ns.Netlink.LinkByName("br0"); err == nil {
				t.Error("br0 still in the kernel after absent")
			}
		})
	}
}

// TestMemoryOnlyAbsentIsDown: in memory-only mode state absent is down
// (nmstate's apply_memory_only_mode): br0 goes from the kernel, its
// profile stays.
func TestMemoryOnlyAbsentIsDown(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	ctx := context.Background()
	if _, err := apply.Apply(ctx, b, decode(t, bridgeAndAddress), apply.Options{StateDir: e.stateDir}); err != nil {
		t.Fatal(err)
	}
	res, err := apply.Apply(ctx, b, decode(t, "interfaces: [{name: br0, type: linux-bridge, state: absent}]"), apply.Options{StateDir: e.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Desired.Interfaces[0].State; st != "down" {
		t.Errorf("applied br0 state %q, want down", st)
	}
	if _, err := e.ns.Netlink.LinkByName("br0"); err == nil {
		t.Error("br0 still in the kernel")
	}
	if got := e.profilesOf(t, "br0"); !slices.Equal(got, []string{"br0 bridge"}) {
		t.Errorf("br0's profiles %v, want its profile kept", got)
	}
}
