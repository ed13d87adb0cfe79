package dhcp

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNamespace runs f on a locked OS thread switched into ns and waits for
// it. Sockets f opens stay in ns. If switching back fails the thread stays
// locked, so the runtime discards it instead of reusing it.
func inNamespace(ns netns.NsHandle, f func() error) error {
	if !ns.IsOpen() {
		return fmt.Errorf("no network namespace handle")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- func() (err error) {
			orig, err := netns.Get()
			if err != nil {
				return fmt.Errorf("reading the thread's namespace: %w", err)
			}
			defer orig.Close()
			if err := netns.Set(ns); err != nil {
				return fmt.Errorf("entering namespace: %w", err)
			}
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic in namespace: %v", p)
				}
				if netns.Set(orig) == nil {
					runtime.UnlockOSThread()
				}
			}()
			return f()
		}()
	}()
	return <-errc
}

// EnableIPv6Autoconf turns on router advertisement processing and SLAAC for
// ifname in the namespace ns, by writing that namespace's own sysctls
// (net.ipv6.conf.<if>.*: they are per namespace and resolved against the
// writing thread's namespace, so the host's are never touched). accept_ra
// 2 keeps RAs working even if forwarding is on.
func EnableIPv6Autoconf(ns netns.NsHandle, ifname string) error {
	settings := [][2]string{
		{"disable_ipv6", "0"},
		{"accept_ra", "2"},
		{"accept_ra_defrtr", "1"},
		{"accept_ra_pinfo", "1"},
		{"autoconf", "1"},
	}
	return inNamespace(ns, func() error {
		for _, kv := range settings {
			p := filepath.Join("/proc/sys/net/ipv6/conf", ifname, kv[0])
			if err := os.WriteFile(p, []byte(kv[1]), 0); err != nil {
				return fmt.Errorf("enabling ipv6 autoconf on %s: %w", ifname, err)
			}
		}
		return nil
	})
}
