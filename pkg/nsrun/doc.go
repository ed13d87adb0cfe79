// Package nsrun runs code inside a network namespace and creates and
// removes named namespaces: the one place that switches OS threads
// between namespaces for the lab, the test helpers, the probes, the DHCP
// clients and the dialers that reach the API through a node's network.
//
// A namespace switch applies to one OS thread, so the code runs on a
// locked thread of its own goroutine; sockets it creates stay in the
// namespace whatever thread uses them later, goroutines it starts do not
// inherit it. A thread that cannot be switched back stays locked, so the
// Go runtime discards it with its goroutine instead of reusing it.
//
// It never changes the process's own namespace or creates anything but
// the namespaces its callers ask for.
package nsrun
