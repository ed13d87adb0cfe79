//go:build qemu

package ovs_test

// testDatapath is the datapath of the tests' bridges in the qemu lane:
// OVS's default, the kernel datapath (the lane loads the openvswitch
// module).
const testDatapath = ""
