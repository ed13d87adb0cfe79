//go:build qemu

package e2e

import "github.com/knmstate/knmstate/internal/testbed/lab"

// nodeKernel: built with -tags qemu (make test-kernel) the suite runs on a
// lab whose nodes are in a qemu guest on Debian's kernel (`lab up
// --kernel debian`), and the tests of the *_qemu_test.go files, which need
// its bonding, 802.1q, VRF and bridge VLAN filtering, are part of it.
const nodeKernel = lab.KernelDebian
