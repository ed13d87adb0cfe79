// Package ovsrun starts a private Open vSwitch — ovsdb-server and
// ovs-vswitchd from Debian's openvswitch-switch — with every file (database,
// sockets, pid files, logs) under one directory, and ovs-vswitchd inside a
// given network namespace, so the kernel links it makes (internal ports,
// the netdev datapath's taps) appear in that namespace only. Tests and the
// lab's nodes use it; it never touches a system OVS (/run/openvswitch,
// /etc/openvswitch) or the caller's own network.
package ovsrun
