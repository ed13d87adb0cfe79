package dhcp

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netns"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

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
	return nsrun.Do(ns, func() error {
		for _, kv := range settings {
			p := filepath.Join("/proc/sys/net/ipv6/conf", ifname, kv[0])
			if err := os.WriteFile(p, []byte(kv[1]), 0); err != nil {
				return fmt.Errorf("enabling ipv6 autoconf on %s: %w", ifname, err)
			}
		}
		return nil
	})
}
