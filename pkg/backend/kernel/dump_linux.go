package kernel

import (
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

const (
	socketTimeout = 10 * time.Second
	// dumpAttempts bounds the retries of a dump the kernel marked as
	// interrupted (the object list changed while it was being read).
	dumpAttempts = 10
)

var timevalTimeout = unix.NsecToTimeval(socketTimeout.Nanoseconds())

// dump runs one netlink dump, repeating it while the kernel reports it as
// interrupted (NLM_F_DUMP_INTR), so callers only ever see a consistent
// list. Every dump of the package goes through here.
func dump[T any](what string, f func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range dumpAttempts {
		v, err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("dumping %s: %w", what, err)
	}
	return v, nil
}

// rawRequest sends a request built with the library's nl helpers on the raw
// socket and returns the reply messages of type resType (0 = none wanted).
func (b *Backend) rawRequest(req *nl.NetlinkRequest, resType uint16) ([][]byte, error) {
	return requestOn(b.raw, req, resType)
}

// tablesRequest is rawRequest on the socket of the route and rule dumps.
func (b *Backend) tablesRequest(req *nl.NetlinkRequest, resType uint16) ([][]byte, error) {
	return requestOn(b.tables, req, resType)
}

func requestOn(s *nl.SocketHandle, req *nl.NetlinkRequest, resType uint16) ([][]byte, error) {
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: s}
	return req.Execute(unix.NETLINK_ROUTE, resType)
}
