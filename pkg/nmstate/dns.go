package nmstate

import "net/netip"

// DNSResolver is the top-level `dns-resolver` section.
type DNSResolver struct {
	Config  *DNSConfig `nms:"config"`
	Running *DNSConfig `nms:"running"` // query only
}

// DNSConfig holds resolver settings. Each list: nil = keep current, empty =
// clear. A Config with all three nil (`config: {}`) purges everything.
type DNSConfig struct {
	// Server addresses; IPv6 link-local servers carry a zone naming the
	// interface (fe80::1%eth1).
	Server  []netip.Addr `nms:"server"`
	Search  []string     `nms:"search"`
	Options []string     `nms:"options"`
}

// Hostname is the top-level `hostname` section.
type Hostname struct {
	Running *string `nms:"running"`
	// Config "" means dynamic hostname.
	Config *string `nms:"config"`
}
