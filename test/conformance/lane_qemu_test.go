//go:build qemu

package conformance

// inQemuGuest: the test binary runs in the qemu lane's guest, which has a
// busybox userland and none of this machine's programs.
const inQemuGuest = true
