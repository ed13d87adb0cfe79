package noded

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// RecordFile is the name of the runtime's record in the state directory.
const RecordFile = "noded.json"

// InstalledLease is one lease as installed, enough to remove it again
// after a restart and to report it.
type InstalledLease struct {
	Interface string       `json:"interface"`
	Family    int          `json:"family"`
	Address   netip.Prefix `json:"address"`
	Expires   time.Time    `json:"expires"`
	Routes    []Route      `json:"routes,omitempty"`
	// DNS and Search are the lease's resolver settings (used when the
	// family has auto-dns).
	DNS    []netip.Addr `json:"dns,omitempty"`
	Search []string     `json:"search,omitempty"`
	// Hostname is the host name the lease gave; the node takes it when
	// its static hostname is empty (hostname.config "").
	Hostname string `json:"hostname,omitempty"`
	// OneShot marks a lease acquired by `nmstatectl apply` without a
	// runtime: nobody renews it until a runtime takes it over.
	OneShot bool `json:"oneShot,omitempty"`
}

// Record is what the runtime manages, kept in the state directory so that
// show can report dynamic interfaces as applied (dhcp: true with the
// auto-* flags), a restarted runtime can take over, and leases acquired
// once by `nmstatectl apply` can be renewed later.
type Record struct {
	Specs  map[string]Spec  `json:"specs"`
	Leases []InstalledLease `json:"leases,omitempty"`
	// DNS is what the runtime appended to the resolv.conf.
	DNS DynamicDNS `json:"dns,omitzero"`
	// Submitted counts the applied states submitted by other processes
	// (Submit); a running runtime acts on each new value.
	Submitted uint64 `json:"submitted,omitempty"`
	// Acted is the last Submitted value a running runtime has acted on
	// (clients started or stopped, routes and DNS rewritten), so a
	// submitter can wait for it (WaitActed).
	Acted uint64 `json:"acted,omitempty"`
}

// ReadRecord loads the record of stateDir; a missing record is empty.
func ReadRecord(stateDir string) (*Record, error) {
	path := filepath.Join(stateDir, RecordFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Record{Specs: map[string]Spec{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading runtime record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("runtime record %s: %w", path, err)
	}
	if r.Specs == nil {
		r.Specs = map[string]Spec{}
	}
	return &r, nil
}

// WriteRecord replaces the record atomically (temporary file and rename).
func WriteRecord(stateDir string, r *Record) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("runtime record: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding runtime record: %w", err)
	}
	f, err := os.CreateTemp(stateDir, "."+RecordFile+".tmp*")
	if err != nil {
		return fmt.Errorf("runtime record: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing runtime record: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing runtime record: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(stateDir, RecordFile)); err != nil {
		return fmt.Errorf("writing runtime record: %w", err)
	}
	return nil
}

// Annotate adds to a state read from the kernel what only the runtime
// knows: dynamic IP sections are reported as applied (dhcp, autoconf and
// the auto-* flags, client-id, DUID, hostname options), and DNS servers
// and search domains the runtime appended move from dns-resolver.config to
// running only, as they are not configuration. The state is modified in
// place.
func (r *Record) Annotate(st *nmstate.State) {
	if st == nil || r == nil {
		return
	}
	for i := range st.Interfaces {
		ifc := &st.Interfaces[i]
		s, ok := r.Specs[ifc.Name]
		if !ok {
			continue
		}
		if s.V4 != nil && ifc.IPv4 != nil {
			c := ifc.IPv4
			c.Enabled = ptr(true)
			c.DHCP = ptr(true)
			annotateAuto(c, s.V4.Auto)
			c.DHCPClientID = optString(s.V4.ClientID)
			c.DHCPSendHostname = ptr(s.V4.SendHostname)
			c.DHCPCustomHostname = optString(s.V4.Hostname)
		}
		if s.V6 != nil && ifc.IPv6 != nil {
			c := ifc.IPv6
			c.Enabled = ptr(true)
			c.DHCP = ptr(s.V6.DHCP)
			c.Autoconf = ptr(s.V6.Autoconf)
			annotateAuto(c, s.V6.Auto)
			c.DHCPDUID = optString(s.V6.DUID)
			c.DHCPSendHostname = ptr(s.V6.SendHostname)
			c.DHCPCustomHostname = optString(s.V6.Hostname)
		}
	}
	if st.DNSResolver != nil && st.DNSResolver.Config != nil {
		c := st.DNSResolver.Config
		c.Server = withoutTail(c.Server, r.DNS.Server)
		c.Search = withoutTail(c.Search, r.DNS.Search)
		if c.Server == nil {
			c.Server = []netip.Addr{}
		}
		if c.Search == nil {
			c.Search = []string{}
		}
	}
}

func annotateAuto(c *nmstate.IPConfig, a Auto) {
	c.AutoDNS = ptr(a.DNS)
	c.AutoGateway = ptr(a.Gateway)
	c.AutoRoutes = ptr(a.Routes)
	c.AutoRouteTableID = ptr(uint32(0))
	if a.TableSet {
		c.AutoRouteTableID = ptr(a.Table)
	}
	if a.MetricSet {
		c.AutoRouteMetric = ptr(a.Metric)
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func ptr[T any](v T) *T { return &v }

// leaseIndex finds the installed lease of a client.
func (r *Record) leaseIndex(k Key) int {
	return slices.IndexFunc(r.Leases, func(l InstalledLease) bool {
		return l.Interface == k.Interface && l.Family == k.Family
	})
}
