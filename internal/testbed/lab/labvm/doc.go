// Package labvm boots one program on Debian's kernel in a qemu guest: the
// kernel the kernel lane caches (hack/kernel-lane/kernel.sh), an initramfs
// holding a static busybox, the program, the files it needs and the kernel
// modules it asks for, and qemu's user-mode network with the guest at
// GuestAddr, this machine's loopback reachable at HostAddr, and ports of
// this machine's loopback forwarded to guest ports. The lab's guest mode
// (internal/testbed/lab) uses it to run a lab's nodes on a full kernel.
//
// It runs under TCG (no KVM: listed on the development VMs but it hangs),
// so the guest's CPU work is many times slower than this machine's.
//
// Its /init (busybox sh, PID 1) mounts the usual file systems, loads the
// modules, prints sentinel lines (Sentinel) on the serial console, runs
// the program as its child and powers the guest off when it ends. It owns
// the files it writes (the initramfs) and the qemu command line; starting,
// watching and stopping the qemu process is the caller's.
package labvm
