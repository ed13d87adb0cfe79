//go:build qemu

package conformance

// ovsDatapath is the datapath of the OVS scenarios' bridges: OVS's
// default, the kernel datapath (Debian's kernel has the openvswitch
// module, loaded by the lane). ovsDatapathShown is how ovs-vsctl shows
// the column then: empty, which means "system".
const (
	ovsDatapath      = ""
	ovsDatapathShown = `""`
)
