//go:build !qemu

package conformance

// inQemuGuest: see lane_qemu_test.go.
const inQemuGuest = false
