// Package noded is the node runtime: the long-running part of knmstate on a
// node that keeps dynamic IP configuration alive once an apply asked for it
// (what NetworkManager does for upstream nmstate). It is embedded in the
// node agent and runs on its own as `nmstatectl service`.
//
// It owns, for every interface whose applied state asks for it:
//   - a DHCPv4 client (pkg/noded/dhcp): acquire, install the address with the
//     lease's lifetime before T1, renew/rebind, release when dhcp turns off
//     or the interface goes down, away or becomes a bridge/bond port;
//     dhcp-client-id, dhcp-send-hostname and dhcp-custom-hostname as given;
//   - IPv6 router advertisements and SLAAC, switched through the namespace's
//     own sysctls (the kernel does the rest; a router solicitation is sent
//     so an apply does not wait for the next periodic advertisement), and a
//     DHCPv6 client when dhcp is true;
//   - what leases hand out: routes with protocol dhcp, in
//     auto-route-table-id with auto-route-metric, the default route only
//     with auto-gateway, none without auto-routes; DNS servers and search
//     domains appended after the static ones in resolv.conf with auto-dns.
//
// The decisions are pure functions of values: UpdateSpecs folds an applied
// state into the per-interface Specs (an apply that does not mention an
// interface or a family leaves it alone, so its client keeps running),
// Decide compares specs with the running clients and says what to start,
// stop, refresh and which sysctls to write, LeaseRoutes and MergeDNS say
// what a lease installs. Runtime does the I/O: it owns the client
// goroutines, installs through an Installer (KernelInstaller over
// pkg/backend/kernel) and keeps a Record in the state directory: the specs
// (so show can report dhcp: true and the auto-* flags as applied, see
// Record.Annotate), the installed leases (so a restarted runtime, or one
// started after a one-shot `nmstatectl apply`, takes them over) and the DNS
// entries it appended.
//
// The apply sequence (pkg/apply) does not know about the runtime:
// ApplyBackend wraps the backend it drives, telling the runtime about the
// applied state right after execution (and about the reverted one after a
// rollback) and annotating Show. Follow is Runtime.Update in the process
// that runs the runtime, and DetachedFollow elsewhere: Submit to a runtime
// running in another process, or AcquireOnce when none runs.
//
// It must not decide anything about static configuration (that is the
// plan's), and it touches only the network namespace and resolv.conf it
// was given.
package noded
