package labvm

import (
	"fmt"
	"strconv"
	"strings"
)

// Addresses of qemu's user-mode network as the guest sees it.
const (
	// GuestAddr is the guest's address on its uplink (the first NIC).
	GuestAddr = "10.0.2.15"
	// HostAddr is this machine's loopback, as the guest reaches it.
	HostAddr = "10.0.2.2"
	// NetPrefix is the user-mode network.
	NetPrefix = "10.0.2.0/24"
)

// Forward forwards a port of this machine's loopback (127.0.0.1) to a
// port of the guest at GuestAddr.
type Forward struct {
	HostPort, GuestPort int
}

// Machine is one guest to boot.
type Machine struct {
	Kernel Kernel
	// Initrd is the initramfs (Image.Write).
	Initrd string
	// MemoryMiB and CPUs size the guest.
	MemoryMiB, CPUs int
	// Console is the file the serial console is written to.
	Console string
	// TranslationCacheMiB bounds TCG's cache of translated code; 0 is
	// qemu's default (1 GiB, most of a guest's resident memory).
	TranslationCacheMiB int
	// Forwards are the ports of this machine's loopback forwarded into
	// the guest.
	Forwards []Forward
	// Cables are virtio-net pairs joined by a qemu hub of their own,
	// behind PCI bridges: a node's NIC at one end, a switch port at the
	// other. In the guest they are plain ethernet devices (no link kind),
	// as a virtual machine's NICs are, where veth pairs would be reported
	// as veth. The guest finds the ends by their MACs.
	Cables []Cable
}

// Cable is the MAC addresses of a cable's two ends: its permanent
// addresses in the guest (a bond copying a port's MAC takes the permanent
// one, as nmstate does).
type Cable struct {
	Node, Switch string
}

// UplinkMAC is the MAC address of the guest's uplink NIC.
const UplinkMAC = "52:54:00:12:34:56"

// cablesPerBridge: a PCI bridge has 32 slots; slot 0 stays free.
const cablesPerBridge = 15

// NumberedCable is cable i with MACs of its own (52:54:01:HH:LL:01 and
// :02, HHLL being i).
func NumberedCable(i int) Cable {
	return Cable{Node: fmt.Sprintf("52:54:01:%02x:%02x:01", i>>8&0xff, i&0xff), Switch: fmt.Sprintf("52:54:01:%02x:%02x:02", i>>8&0xff, i&0xff)}
}

// cableArgs are qemu's arguments for m.Cables. Their NICs do no VLAN
// filtering (ctrl_vlan=off), as a veth does none: with it each VLAN a
// bridge port or VLAN link joins or leaves is one control command the
// emulated CPU waits for, per NIC, and upstream's default trunk (2-4094)
// on a bond of two of them made 8188 (5 s of a cleanup in the TCG guest).
func (m Machine) cableArgs() []string {
	var args []string
	for i, c := range m.Cables {
		bridge := fmt.Sprintf("cables%d", i/cablesPerBridge)
		if i%cablesPerBridge == 0 {
			args = append(args, "-device", fmt.Sprintf("pci-bridge,id=%s,chassis_nr=%d", bridge, i/cablesPerBridge+1))
		}
		for end, mac := range []string{c.Node, c.Switch} {
			id := fmt.Sprintf("cable%d-%d", i, end)
			slot := (i%cablesPerBridge)*2 + end + 1
			args = append(args,
				"-netdev", fmt.Sprintf("hubport,id=%s,hubid=%d", id, i),
				"-device", fmt.Sprintf("virtio-net-pci,netdev=%s,mac=%s,bus=%s,addr=%#x,ctrl_vlan=off,romfile=", id, mac, bridge, slot))
		}
	}
	return args
}

// Args is qemu-system-x86_64's command line (without the program name).
// The guest has one NIC, a virtio-net on qemu's user-mode network without
// IPv6 (no router advertisements reach the guest: its only IPv4 route is
// the user-mode network itself, see the guest's uplink setup), and a
// virtio-rng so the guest's random numbers are ready at once.
func (m Machine) Args() []string {
	netdev := []string{"user", "id=net0", "net=" + NetPrefix, "host=" + HostAddr, "ipv6=off"}
	for _, f := range m.Forwards {
		netdev = append(netdev, fmt.Sprintf("hostfwd=tcp:127.0.0.1:%d-%s:%d", f.HostPort, GuestAddr, f.GuestPort))
	}
	accel := "tcg"
	if m.TranslationCacheMiB > 0 {
		accel += ",tb-size=" + strconv.Itoa(m.TranslationCacheMiB)
	}
	return append([]string{
		// TCG: KVM is listed on the development VMs but hangs.
		"-accel", accel, "-cpu", "max",
		"-smp", strconv.Itoa(m.CPUs), "-m", strconv.Itoa(m.MemoryMiB),
		"-nodefaults", "-nographic", "-no-reboot", "-monitor", "none",
		"-serial", "file:" + m.Console,
		"-kernel", m.Kernel.Image, "-initrd", m.Initrd,
		// panic=-1 and -no-reboot end the VM if /init dies.
		// no_timer_check: under TCG on a loaded machine the kernel's
		// early IO-APIC timer check can miss its ticks and panic ("IO-APIC
		// + timer doesn't work!"); the emulated timer works, so skip it.
		// rcupdate.rcu_expedited=1: link and namespace changes wait for
		// RCU grace periods, which are slow in an emulated CPU; expedited
		// ones took the kernel lane's guest from 275 s to 250 s.
		"-append", "console=ttyS0 panic=-1 quiet loglevel=3 no_timer_check rcupdate.rcu_expedited=1 rdinit=/init",
		"-netdev", strings.Join(netdev, ","),
		"-device", "virtio-net-pci,netdev=net0,mac=" + UplinkMAC + ",romfile=",
		"-device", "virtio-rng-pci",
	}, m.cableArgs()...)
}

// Modules are the kernel modules the guest's devices need (virtio-net and
// virtio-rng on PCI), loaded before any other.
var Modules = []string{"virtio_pci", "virtio_net", "virtio_rng"}
