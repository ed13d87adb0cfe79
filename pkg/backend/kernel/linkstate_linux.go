package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// This file serves the node runtime (pkg/noded) and its DHCP clients,
// which follow single links of a namespace rather than the whole state
// Show reads: they get domain values (names, flags, netip prefixes) so
// that netlink types stay in this package.

// ErrLinkNotFound is (or is wrapped by) LinkReader's errors when the
// namespace has no link of the name asked for.
var ErrLinkNotFound = errors.New("link not found")

// LinkStatus is what the node runtime needs to know of one link.
type LinkStatus struct {
	Name  string
	Index int
	// Up is the administrative state (IFF_UP).
	Up bool
	// OperState is the operational state (RFC 2863: "up", "down",
	// "lower-layer-down", "dormant", "unknown", ...).
	OperState string
	// OperUp: the link is operationally up. Devices without operational
	// state report "unknown", which counts as up.
	OperUp bool
}

func linkStatus(a *netlink.LinkAttrs) LinkStatus {
	return LinkStatus{
		Name: a.Name, Index: a.Index, Up: a.Flags&net.FlagUp != 0,
		OperState: a.OperState.String(),
		OperUp:    a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown,
	}
}

// LinkAddress is one address of a link.
type LinkAddress struct {
	// Prefix is the address with its prefix length (not masked).
	Prefix netip.Prefix
	// Tentative: duplicate address detection has not finished.
	Tentative bool
	// DADFailed: duplicate address detection found the address in use.
	DADFailed bool
}

// linkAddress converts one kernel address; false for one without a
// usable IP.
func linkAddress(a netlink.Addr) (LinkAddress, bool) {
	if a.IPNet == nil {
		return LinkAddress{}, false
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return LinkAddress{}, false
	}
	ones, _ := a.Mask.Size()
	return LinkAddress{
		Prefix:    netip.PrefixFrom(ip.Unmap(), ones),
		Tentative: a.Flags&unix.IFA_F_TENTATIVE != 0,
		DADFailed: a.Flags&unix.IFA_F_DADFAILED != 0,
	}, true
}

// LinkReader looks single links of one network namespace up. It holds a
// netlink socket in that namespace until Close.
type LinkReader struct {
	h *netlink.Handle
}

// OpenLinkReader opens a LinkReader on the namespace ns, which the caller
// keeps open.
func OpenLinkReader(ns netns.NsHandle) (*LinkReader, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink handle: %w", err)
	}
	return &LinkReader{h: h}, nil
}

// Close releases the reader's socket.
func (r *LinkReader) Close() { r.h.Close() }

// Link returns the status of the link called name; the error is
// ErrLinkNotFound when there is none.
func (r *LinkReader) Link(name string) (LinkStatus, error) {
	l, err := r.link(name)
	if err != nil {
		return LinkStatus{}, err
	}
	return linkStatus(l.Attrs()), nil
}

func (r *LinkReader) link(name string) (netlink.Link, error) {
	l, err := r.h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, ErrLinkNotFound
	}
	return l, err
}

// operPoll is how often WaitOperUp looks at the link again.
const operPoll = 20 * time.Millisecond

// WaitOperUp polls until the link called name is operationally up (see
// LinkStatus.OperUp), the link is missing, or ctx ends. Until the
// kernel's link watcher has processed carrier-on (it batches events, up
// to a second), a device transmits through a qdisc that drops everything.
func (r *LinkReader) WaitOperUp(ctx context.Context, name string) error {
	for {
		s, err := r.Link(name)
		if err != nil {
			return fmt.Errorf("finding %s: %w", name, err)
		}
		if s.OperUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be up (state %s): %w", name, s.OperState, ctx.Err())
		case <-time.After(operPoll):
		}
	}
}

// Addresses lists the addresses of the link called name, of one family
// (4 or 6; 0 = both), in the kernel's order.
func (r *LinkReader) Addresses(name string, family int) ([]LinkAddress, error) {
	l, err := r.link(name)
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", name, err)
	}
	fam := netlink.FAMILY_ALL
	switch family {
	case 4:
		fam = netlink.FAMILY_V4
	case 6:
		fam = netlink.FAMILY_V6
	}
	list, err := dump("addresses", func() ([]netlink.Addr, error) {
		return r.h.AddrList(l, fam)
	})
	if err != nil {
		return nil, fmt.Errorf("listing addresses of %s: %w", name, err)
	}
	var out []LinkAddress
	for _, a := range list {
		if la, ok := linkAddress(a); ok {
			out = append(out, la)
		}
	}
	return out, nil
}

// LinkEvent is one link notification: a link appeared or changed
// (Deleted false) or was removed.
type LinkEvent struct {
	Link    LinkStatus
	Deleted bool
}

// linkEventBuffer absorbs bursts (a bridge with many ports going down)
// while the reader is busy.
const linkEventBuffer = 64

// WatchLinks subscribes to the link notifications of the namespace ns
// (which the caller keeps open). Errors of the subscription after it is
// set up go to onError (nil: dropped); the failure of a read caused by
// ctx ending is not reported. The channel is closed when ctx ends or the
// subscription fails for good.
func WatchLinks(ctx context.Context, ns netns.NsHandle, onError func(error)) (<-chan LinkEvent, error) {
	in := make(chan netlink.LinkUpdate, linkEventBuffer)
	err := netlink.LinkSubscribeWithOptions(in, ctx.Done(), netlink.LinkSubscribeOptions{
		Namespace: &ns,
		ErrorCallback: func(err error) {
			if ctx.Err() == nil && onError != nil { // closing the subscription fails its read
				onError(err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to link changes: %w", err)
	}
	out := make(chan LinkEvent, linkEventBuffer)
	go func() {
		defer close(out)
		// Drained to the end, so the library's reader never blocks on a
		// send once nobody listens and can see its socket closed.
		defer func() {
			for range in {
			}
		}()
		for u := range in {
			ev := LinkEvent{Link: linkStatus(u.Attrs()), Deleted: u.Header.Type == unix.RTM_DELLINK}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
