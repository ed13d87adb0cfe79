// Package dhcp owns the DHCP clients of the node runtime: one DHCPv4 and/or
// one DHCPv6 client per interface, each bound to an interface inside a
// given network namespace, keeping its lease alive (acquire, renew at T1,
// rebind at T2, expire, release on stop) and reporting every change as an
// Event carrying a Lease.
//
// It must not configure the interface: it never installs addresses,
// routes or DNS. The runtime applies a Lease (honouring auto-dns,
// auto-routes, auto-gateway, auto-route-table-id, auto-route-metric) through
// the backend. The only kernel setting it writes is EnableIPv6Autoconf, the
// namespace's own per-interface sysctls for router advertisements and
// SLAAC, on request.
//
// Sockets are opened on a locked OS thread switched into the interface's
// namespace and switched back afterwards; the file descriptor stays bound
// to that namespace, so one process serves interfaces in many namespaces.
//
// The lease lifecycle is a pure state machine (Machine: time passed in, no
// I/O) driven by a small loop that performs the exchanges.
//
// The runtime stops a client with Stop(true) when dhcp becomes false (the
// lease is released), and with Stop(false) when the interface disappears
// (the socket is bound to it and nothing can be sent any more).
//
// The runtime must install a DHCPv4 address before T1: renewals are sent
// from the leased address (a server drops unicast from 0.0.0.0) and the
// server answers that address by unicast, which needs ARP for it to work.
//
// Library choice: github.com/insomniacslk/dhcp (nclient4, nclient6, and the
// dhcpv4/dhcpv6 message packages). It is pure Go (no cgo, no external
// dhclient/dhcpcd binary to ship or supervise), BSD-3 licensed, maintained
// and used by u-root, CoreDHCP and others; nclient4 sends from an AF_PACKET
// socket, which works on an interface without any address (needed for
// DISCOVER) and can be opened inside another namespace; its client leaves
// lease timing to the caller, which is what we want since the timing lives
// in our Machine. What it lacks we add here: the lease state machine,
// unicast renew vs. broadcast rebind, DHCPv6 Renew/Rebind/Release messages,
// client-id/DUID encodings as nmstate names them, and a BPF filter so the
// packet socket only wakes us for UDP port 68. Alternatives considered:
// running dhclient/dhcpcd (external processes, file-based hooks, not in a
// static binary), github.com/digineo/go-dhclient (DHCPv4 only, built on the
// same message library), writing the codec ourselves (more code to own for
// no gain).
package dhcp
