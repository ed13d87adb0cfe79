//go:build qemu

package nm_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// netdevsimEth1 creates a netdevsim device with one port inside ns (the
// port goes to the namespace of the process writing new_device) named
// eth1; the device (and its VFs) is deleted on cleanup.
func netdevsimEth1(t *testing.T, ns *nstest.NS) netlink.Link {
	t.Helper()
	if _, err := os.Stat("/sys/bus/netdevsim/new_device"); err != nil {
		t.Fatalf("no netdevsim bus (%v): the kernel lane loads netdevsim (hack/kernel-lane/modules)", err)
	}
	id := 900 + os.Getpid()%50
	t.Cleanup(func() {
		err := os.WriteFile("/sys/bus/netdevsim/del_device", []byte(fmt.Sprint(id)), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrInvalid) {
			t.Logf("deleting netdevsim%d: %v", id, err)
		}
	})
	if err := ns.Do(func() error {
		return os.WriteFile("/sys/bus/netdevsim/new_device", []byte(fmt.Sprintf("%d 1", id)), 0)
	}); err != nil {
		t.Fatalf("creating netdevsim%d: %v", id, err)
	}
	dev := fmt.Sprintf("netdevsim%d", id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		links, err := ns.Netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Attrs().ParentDevBus == "netdevsim" && l.Attrs().ParentDev == dev {
				if err := ns.Netlink.LinkSetName(l, "eth1"); err != nil {
					t.Fatal(err)
				}
				ns.LinkUp(t, "eth1")
				l, err := ns.Netlink.LinkByName("eth1")
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no port of %s in the namespace", dev)
		}
	}
}

// sriovPolicy is kubernetes-nmstate's SR-IOV story, cut to netdevsim.
const sriovPolicy = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ethernet:
    sr-iov:
      total-vfs: 2
      vfs:
      - {id: 0, mac-address: "02:00:00:00:01:00", vlan-id: 100, trust: true, max-tx-rate: 100}
`

// TestSRIOVOnNetdevsimThroughNetworkManager: on a netdevsim NIC
// (sriov_numvfs in sysfs, which NetworkManager takes for SR-IOV
// capability), ethernet.sr-iov becomes the profile's sriov setting;
// NetworkManager creates the VFs and configures VF 0 (MAC, VLAN, trust,
// rate) at activation, the kernel shows them (sysfs and netlink) and the
// apply verifies; total-vfs 0 removes them again.
func TestSRIOVOnNetdevsimThroughNetworkManager(t *testing.T) {
	ctx := context.Background()
	ns := nstest.New(t)
	l := netdevsimEth1(t, ns)
	numvfs := filepath.Join("/sys/bus/netdevsim/devices", l.Attrs().ParentDev, "sriov_numvfs")
	dir := t.TempDir()
	in, err := nmrun.Start(ctx, nmrun.Options{NetNS: ns.Path, Dir: dir})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ns: ns, nm: in, stateDir: filepath.Join(dir, "state")}
	b := e.open(t, false)
	if caps, _ := nmrun.Nmcli(ctx, in.Bus, "-g", "CAPABILITIES.SRIOV", "device", "show", "eth1"); strings.TrimSpace(caps) != "yes" {
		t.Errorf("NetworkManager's SR-IOV capability of eth1: %q", caps)
	}
	applyOK(t, e, b, sriovPolicy)
	if got := nmGet(t, e, "eth1", "sriov.total-vfs,sriov.vfs,GENERAL.STATE"); strings.Join(got, "|") != "2|0 mac=02:00:00:00:01:00 max-tx-rate=100 trust=true vlans=100|activated" {
		t.Errorf("profile / activation: %q", got)
	}
	if n, err := os.ReadFile(numvfs); err != nil || strings.TrimSpace(string(n)) != "2" {
		t.Errorf("sriov_numvfs %q (%v), want 2", n, err)
	}
	l, err = ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	vfs := l.Attrs().Vfs
	if len(vfs) != 2 || vfs[0].Mac.String() != "02:00:00:00:01:00" || vfs[0].Vlan != 100 || vfs[0].Trust == 0 || vfs[0].MaxTxRate != 100 {
		t.Errorf("kernel VFs %+v", vfs)
	}
	cur, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if eth := cur.Find("eth1")[0].Ethernet; eth == nil || eth.SRIOV == nil || eth.SRIOV.TotalVFs == nil || *eth.SRIOV.TotalVFs != 2 || len(eth.SRIOV.VFs) != 2 {
		t.Errorf("shown ethernet %+v", eth)
	}
	applyOK(t, e, b, `
interfaces:
- {name: eth1, type: ethernet, state: up, ethernet: {sr-iov: {total-vfs: 0}}}
`)
	if n, _ := os.ReadFile(numvfs); strings.TrimSpace(string(n)) != "0" {
		t.Errorf("after total-vfs 0 sriov_numvfs is %q", n)
	}
}
