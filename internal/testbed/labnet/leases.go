package labnet

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// LeaseRecord is one line of dnsmasq's lease database.
type LeaseRecord struct {
	Expiry time.Time
	// HWAddr is the MAC (DHCPv4) or the IAID in decimal (DHCPv6).
	HWAddr   string
	Addr     netip.Addr
	Hostname string // "*" when none was sent
	ClientID string // "*" when none was sent; the DUID for DHCPv6
}

// Leases reads dnsmasq's current lease database. A missing file (no lease
// granted yet) is an empty list.
func (s *Switch) Leases() ([]LeaseRecord, error) {
	f, err := os.Open(s.cfg.leasePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading leases: %w", err)
	}
	defer f.Close()
	return parseLeases(bufio.NewScanner(f))
}

func parseLeases(sc *bufio.Scanner) ([]LeaseRecord, error) {
	var out []LeaseRecord
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "duid" { // the server's own DUID
			continue
		}
		if len(fields) != 5 {
			return nil, fmt.Errorf("leases line %d: %d fields, want 5", n, len(fields))
		}
		exp, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("leases line %d: expiry: %w", n, err)
		}
		a, err := netip.ParseAddr(fields[2])
		if err != nil {
			return nil, fmt.Errorf("leases line %d: address: %w", n, err)
		}
		out = append(out, LeaseRecord{Expiry: time.Unix(exp, 0), HWAddr: fields[1], Addr: a, Hostname: fields[3], ClientID: fields[4]})
	}
	return out, sc.Err()
}
