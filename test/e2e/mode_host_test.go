//go:build !qemu

package e2e

// nodeKernel is the kernel the suite's nodes run on: this machine's (no
// bonding, 802.1q, VRF or bridge VLAN filtering). `go test -tags qemu`
// (make test-kernel) builds the suite for Debian's kernel instead, with
// the files *_qemu_test.go that need it.
const nodeKernel = ""
