//go:build !qemu

package ovs_test

// testDatapath is the datapath of the tests' bridges: userspace, since
// this kernel has no openvswitch module.
const testDatapath = "netdev"
