package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// LLDP: the kernel has no LLDP agent. `lldp.enabled` is kept as a marker
// file in Options.LLDPDir (<iface>.enabled); the node runtime receives
// LLDP frames on the marked interfaces and writes what it decoded to
// <iface>.neighbors.json (WriteLLDPNeighbors); Show reports both for
// ethernet NICs and veths, leaving out neighbours whose TTL ran out.

// LLDPNeighbor is one neighbour as the node runtime stores it.
type LLDPNeighbor struct {
	// TLVs are nmstate's TLV objects (pkg/lldp).
	TLVs []any `json:"tlvs"`
	// Expires is when its TTL runs out.
	Expires time.Time `json:"expires"`
}

func (b *Backend) lldpPath(name, suffix string) string {
	if b.opts.LLDPDir == "" || !safeFileName(name) {
		return ""
	}
	return b.opts.LLDPDir + "/" + name + suffix
}

// safeFileName: an interface name usable as a file name in a directory.
func safeFileName(name string) bool {
	if name == "" || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if r == '/' || r == 0 {
			return false
		}
	}
	return true
}

// LLDPLock is the lock file of the LLDP receivers, "" without an LLDP
// directory.
func (b *Backend) LLDPLock() string {
	if b.opts.LLDPDir == "" {
		return ""
	}
	return b.opts.LLDPDir + "/.receiver.lock"
}

// LLDPEnabled lists the interfaces LLDP reception is enabled on.
func (b *Backend) LLDPEnabled() ([]string, error) {
	if b.opts.LLDPDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(b.opts.LLDPDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); len(n) > len(".enabled") && n[len(n)-len(".enabled"):] == ".enabled" {
			out = append(out, n[:len(n)-len(".enabled")])
		}
	}
	return out, nil
}

// setLLDP turns LLDP reception of name on or off; off forgets its
// neighbours.
func (b *Backend) setLLDP(name string, on bool) error {
	p := b.lldpPath(name, ".enabled")
	if p == "" {
		return notSupported("%s: lldp needs an LLDP directory (the backend was opened without one)", name)
	}
	if on {
		if err := os.MkdirAll(b.opts.LLDPDir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, nil, 0o644)
	}
	for _, f := range []string{p, b.lldpPath(name, ".neighbors.json")} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// WriteLLDPNeighbors replaces the stored neighbours of name (the node
// runtime's receiver calls it).
func (b *Backend) WriteLLDPNeighbors(name string, ns map[string]LLDPNeighbor) error {
	p := b.lldpPath(name, ".neighbors.json")
	if p == "" {
		return fmt.Errorf("no LLDP directory for %q", name)
	}
	data, err := json.Marshal(ns)
	if err != nil {
		return err
	}
	return writeFileAtomic(p, data)
}

// readLLDP is name's lldp section, or nil without an LLDP directory.
func (b *Backend) readLLDP(name string, now time.Time) (*nmstate.LLDP, error) {
	p := b.lldpPath(name, ".enabled")
	if p == "" {
		return nil, nil
	}
	_, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &nmstate.LLDP{Enabled: ptr(false)}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &nmstate.LLDP{Enabled: ptr(true), Neighbors: []any{}}
	data, err := os.ReadFile(b.lldpPath(name, ".neighbors.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var ns map[string]LLDPNeighbor
	// Numbers stay json.Number: nmstate's opaque values hold them so.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&ns); err != nil {
		return nil, fmt.Errorf("LLDP neighbours of %s: %w", name, err)
	}
	keys := make([]string, 0, len(ns))
	for k, n := range ns {
		if n.Expires.After(now) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Neighbors = append(out.Neighbors, ns[k].TLVs)
	}
	return out, nil
}
