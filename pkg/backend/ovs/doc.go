// Package ovs is the Open vSwitch side of a node: it reads the OVS
// database (bridges, ports, interfaces, the Open_vSwitch table) and merges
// it into the kernel backend's view, as nmstate reports OVS, and it runs
// the OVS operations of a plan as OVSDB transactions while handing every
// other operation to the kernel backend in order.
//
// It decides nothing: the plan (pkg/nmstate) says what each bridge must
// hold; this package only writes that into OVSDB and waits until
// ovs-vswitchd has applied it. It reaches OVSDB through pkg/ovsdb only.
package ovs
