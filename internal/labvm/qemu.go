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
	return []string{
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
		"-append", "console=ttyS0 panic=-1 quiet loglevel=3 no_timer_check rdinit=/init",
		"-netdev", strings.Join(netdev, ","),
		"-device", "virtio-net-pci,netdev=net0,romfile=",
		"-device", "virtio-rng-pci",
	}
}

// Modules are the kernel modules the guest's devices need (virtio-net and
// virtio-rng on PCI), loaded before any other.
var Modules = []string{"virtio_pci", "virtio_net", "virtio_rng"}
