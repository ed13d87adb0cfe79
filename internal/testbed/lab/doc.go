// Package lab runs a local knmstate cluster on this machine (`knmstate lab`):
// a real etcd and kube-apiserver inside a "switch" network namespace, the
// switch's bridge and dnsmasq (DHCP, router advertisements, DNS), one network
// namespace (plus mount and UTS namespaces) per node with NICs eth0..eth2 on
// the switch, Node objects kept Ready, and one `knmstate handler` process per
// node plus the controller. kubectl reaches the API server through a TCP
// forwarder on this machine's loopback.
//
// In guest mode (Options.Kernel) the nodes run on another kernel, in a qemu
// guest (internal/testbed/lab/labvm): the supervisor keeps etcd, the API server (on
// loopback) and the controller, and a guest agent (RunGuest, `knmstate lab
// guest`) builds the switch, dnsmasq, the nodes, their node runtimes and
// handlers inside the guest with the supervisor's own steps, forwards the
// switch's API address to the API server through qemu's user-mode network,
// and serves its state and exec into the nodes (internal/testbed/lab/remoteexec)
// through a port qemu forwards from this machine's loopback.
//
// A lab is a directory (Options.Dir) and a detached supervisor process
// (`knmstate lab run`, started by Up) that owns everything the lab runs and
// removes it when it gets SIGTERM (Down). The directory holds the pidfile,
// the state file (State, JSON) that Status and Exec read, the logs, the
// kubeconfig files and the control plane's and switch's files.
//
// It owns exactly what it creates: its namespaces (named after the lab, see
// labnet.NamespaceName), its processes (each one mentions the lab directory
// in its command line or runs inside one of the lab's namespaces, which is
// how Down finds leftovers), the mounts below the lab directory and the
// directory itself. It must never change this machine's interfaces, routes,
// sysctls or /etc/resolv.conf: the only host-side network objects are the
// forwarder's listening socket on 127.0.0.1 (in guest mode: the API
// server's and etcd's, and qemu's forwarded port, all on 127.0.0.1).
package lab
