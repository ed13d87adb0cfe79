package benchcmd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// The kernel's process events connector (linux/cn_proc.h, connector.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procCnMcastIgnore = 2
	procEventFork     = 0x00000001
	nlmsgHdrLen       = 16
	cnMsgLen          = 20
	procEventHdrLen   = 16
)

// forkCounter counts the processes created by a set of processes and
// their descendants, from the kernel's process events connector: every
// fork in the system is reported with the parent's and the child's
// thread-group IDs, so nothing is missed however short-lived it is (which
// sampling /proc for children would), and processes of other programs on
// this machine are not counted (which /proc/stat's system-wide
// `processes` counter would). Threads (same thread group) are not
// processes and are not counted. Events only exist in the initial network
// namespace, where this process runs.
type forkCounter struct {
	fd   int
	done chan struct{}

	mu      sync.Mutex
	tracked map[uint32]bool
	forks   int
	lost    int
	err     error
}

// newForkCounter starts counting forks of roots (PIDs) and descendants.
func newForkCounter(roots []int) (*forkCounter, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("process events socket: %w", err)
	}
	f := &forkCounter{fd: fd, done: make(chan struct{}), tracked: map[uint32]bool{}}
	for _, p := range roots {
		f.tracked[uint32(p)] = true
	}
	fail := func(what string, err error) (*forkCounter, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("process events: %s: %w", what, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200_000}); err != nil {
		return fail("receive timeout", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		return fail("bind", err)
	}
	if err := f.control(procCnMcastListen); err != nil {
		return fail("listen", err)
	}
	go f.loop()
	return f, nil
}

// control sends a PROC_CN_MCAST_* operation.
func (f *forkCounter) control(op uint32) error {
	msg := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	le := binary.NativeEndian
	le.PutUint32(msg[0:], uint32(len(msg)))
	le.PutUint16(msg[4:], unix.NLMSG_DONE)
	le.PutUint32(msg[12:], uint32(unix.Getpid()))
	cn := msg[nlmsgHdrLen:]
	le.PutUint32(cn[0:], cnIdxProc)
	le.PutUint32(cn[4:], cnValProc)
	le.PutUint16(cn[16:], 4)
	le.PutUint32(cn[cnMsgLen:], op)
	return unix.Sendto(f.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

func (f *forkCounter) loop() {
	defer close(f.done)
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(f.fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			if f.stopping() {
				return
			}
			continue
		case errors.Is(err, unix.ENOBUFS):
			// Events were dropped: the count is a lower bound.
			f.mu.Lock()
			f.lost++
			f.mu.Unlock()
			continue
		case err != nil:
			f.mu.Lock()
			f.err = err
			f.mu.Unlock()
			return
		}
		f.parse(buf[:n])
		if f.stopping() {
			return
		}
	}
}

func (f *forkCounter) stopping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tracked == nil
}

// parse handles the netlink messages of one datagram.
func (f *forkCounter) parse(b []byte) {
	le := binary.NativeEndian
	for len(b) >= nlmsgHdrLen {
		l := int(le.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return
		}
		m := b[nlmsgHdrLen:l]
		b = b[(l+3)&^3:]
		if len(m) < cnMsgLen+procEventHdrLen+16 || le.Uint32(m) != cnIdxProc {
			continue
		}
		ev := m[cnMsgLen:]
		if le.Uint32(ev) != procEventFork {
			continue
		}
		d := ev[procEventHdrLen:]
		parentTGID, childPID, childTGID := le.Uint32(d[4:]), le.Uint32(d[8:]), le.Uint32(d[12:])
		if childPID != childTGID || childTGID == parentTGID {
			continue // a new thread, not a new process
		}
		f.mu.Lock()
		if f.tracked != nil && f.tracked[parentTGID] {
			f.tracked[childTGID] = true
			f.forks++
		}
		f.mu.Unlock()
	}
}

// stop ends counting and returns the number of processes created, and
// how many times the kernel dropped events (then the count is a lower
// bound).
func (f *forkCounter) stop() (forks, lost int, err error) {
	_ = f.control(procCnMcastIgnore)
	f.mu.Lock()
	f.tracked = nil
	f.mu.Unlock()
	<-f.done
	unix.Close(f.fd)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forks, f.lost, f.err
}
