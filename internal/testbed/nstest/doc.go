// Package nstest owns throw-away network namespaces for kernel tests: one
// fresh named namespace per call to New, removed by t.Cleanup, plus small
// fixtures (veth pairs between namespaces, links up, addresses).
//
// It must not touch the caller's own network namespace: the only host-side
// effect is creating and removing a bind-mounted file under /run/netns.
// Code that has to run inside a namespace goes through Do, which uses a
// dedicated, locked OS thread so the test goroutine never changes namespace.
// Namespace names carry the creating PID, so New can remove namespaces left
// by a test binary that was killed before its cleanups ran.
//
// Tests that need kernel features the development VM lacks (bonding, 8021q,
// dummy, VRF, bridge VLAN filtering, team, openvswitch) live in files named
// *_qemu_test.go with the build tag "qemu"; `make test-kernel` compiles them
// and runs them under qemu on Debian's kernel (see hack/kernel-lane).
package nstest
