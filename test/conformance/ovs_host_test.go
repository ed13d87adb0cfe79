//go:build !qemu

package conformance

// ovsDatapath is the datapath of the OVS scenarios' bridges: userspace,
// since this kernel has no openvswitch module. ovsDatapathShown is how
// ovs-vsctl shows it.
const (
	ovsDatapath      = "netdev"
	ovsDatapathShown = "netdev"
)
