package conformance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// netdevsimIDs hands out netdevsim device ids: they are global to the
// kernel, and the tests of one binary run one after another, but a
// leftover of a failed earlier run must not collide. Odd start, unlikely
// to be taken by hand.
var netdevsimIDs atomic.Uint32

func init() { netdevsimIDs.Store(uint32(700 + os.Getpid()%100*10)) }

// netdevsimNIC creates a netdevsim device with one port inside ns (the
// device's netdevs go to the namespace of the process writing new_device)
// and renames the port to name. The device is deleted on cleanup, which
// also removes its VFs.
func netdevsimNIC(t *testing.T, ns *nstest.NS, name string) {
	t.Helper()
	if _, err := os.Stat("/sys/bus/netdevsim/new_device"); err != nil {
		t.Fatalf("no netdevsim bus (%v): the netdevsim module is loaded in the qemu lane (hack/kernel-lane/modules)", err)
	}
	id := netdevsimIDs.Add(1)
	t.Cleanup(func() {
		err := os.WriteFile("/sys/bus/netdevsim/del_device", []byte(fmt.Sprint(id)), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrInvalid) {
			t.Logf("deleting netdevsim%d: %v", id, err)
		}
	})
	err := ns.Do(func() error {
		return os.WriteFile("/sys/bus/netdevsim/new_device", []byte(fmt.Sprintf("%d 1", id)), 0)
	})
	if err != nil {
		t.Fatalf("creating netdevsim%d: %v", id, err)
	}
	// The port is registered by the write, named eth%d (udev, which would
	// rename it eni<id>np1, does not run here): found by its device.
	dev := fmt.Sprintf("netdevsim%d", id)
	var l netlink.Link
	deadline := time.Now().Add(10 * time.Second)
	for l == nil {
		links, err := ns.Netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range links {
			if c.Attrs().ParentDevBus == "netdevsim" && c.Attrs().ParentDev == dev {
				l = c
			}
		}
		if l == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no port of %s in the namespace", dev)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := ns.Netlink.LinkSetDown(l); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.LinkSetName(l, name); err != nil {
		t.Fatalf("renaming %s to %s: %v", l.Attrs().Name, name, err)
	}
	ns.LinkUp(t, name)
}

// netdevsimVFCount counts the VFs netlink lists for the link name in ns
// (the backend reads the count from sysfs): an independent check.
func netdevsimVFCount(ns *nstest.NS, name string) (int, error) {
	l, err := ns.Netlink.LinkByName(name)
	if err != nil {
		return 0, err
	}
	return len(l.Attrs().Vfs), nil
}
