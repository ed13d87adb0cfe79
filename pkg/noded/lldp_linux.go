package noded

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/lldp"
	"github.com/knmstate/knmstate/pkg/noded/dhcp"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// LLDP reception (what NetworkManager does for upstream with lldp.enabled):
// one packet socket per interface the installer lists as LLDP-enabled,
// in the node's namespace; each LLDPDU is decoded (pkg/lldp) and the
// interface's neighbours, with their TTL, handed back to the installer,
// which stores them for Show. The set of interfaces is re-read every
// poll, so an apply that enables LLDP takes effect within PollInterval.
// Both the node runtime and the handler run a receiver (the handler may
// run without a runtime, as in kubelet mode); a lock on the LLDP
// directory (the installer's) lets one of them listen at a time.

// RunLLDP receives LLDP for the interfaces inst lists until ctx ends,
// re-reading them every poll, once it holds lock (a file path; "" = no
// lock). It is what Runtime.Run does besides DHCP.
func RunLLDP(ctx context.Context, ns dhcp.NamespaceHandle, inst Installer, lock string, poll time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lr := &lldpReceiver{ns: ns, inst: inst, log: log, now: time.Now, running: map[string]context.CancelFunc{}}
	defer lr.stop()
	t := time.NewTicker(poll)
	defer t.Stop()
	held := lock == ""
	for {
		if !held {
			if f := tryLock(lock); f != nil {
				defer f.Close() // releases the lock
				held = true
			}
		}
		if held {
			lr.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tryLock takes an exclusive flock on path; the lock is held until the
// returned file is closed. nil: someone else holds it (or no file).
func tryLock(path string) *os.File {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
}

// lldpNearestBridge is the LLDP destination address (nearest bridge).
var lldpNearestBridge = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}

type lldpReceiver struct {
	ns   dhcp.NamespaceHandle
	inst Installer
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	running map[string]context.CancelFunc
	wg      sync.WaitGroup
}

// sync starts listeners for newly enabled interfaces and stops those of
// interfaces no longer enabled.
func (l *lldpReceiver) sync(ctx context.Context) {
	names, err := l.inst.LLDPEnabled(ctx)
	if err != nil {
		l.log.Error("reading LLDP-enabled interfaces", "error", err)
		return
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, stop := range l.running {
		if !want[n] {
			stop()
			delete(l.running, n)
		}
	}
	for n := range want {
		if l.running[n] != nil {
			continue
		}
		conn, err := l.listen(n)
		if err != nil {
			// The interface may not exist yet: the next poll retries.
			l.log.Debug("lldp listener", "interface", n, "error", err)
			continue
		}
		lctx, stop := context.WithCancel(ctx)
		l.running[n] = stop
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.receive(lctx, n, conn)
		}()
		l.log.Info("lldp reception started", "interface", n)
	}
}

// stop ends every listener and waits for them.
func (l *lldpReceiver) stop() {
	l.mu.Lock()
	for n, stop := range l.running {
		stop()
		delete(l.running, n)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// listen opens a packet socket for LLDP frames on name, in the namespace,
// and joins the LLDP multicast group (a real NIC filters it out otherwise).
func (l *lldpReceiver) listen(name string) (*packet.Conn, error) {
	var conn *packet.Conn
	err := nsrun.Do(l.ns, func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		c, err := packet.Listen(ifi, packet.Datagram, lldp.EtherType, nil)
		if err != nil {
			return err
		}
		rc, err := c.SyscallConn()
		if err == nil {
			var serr error
			err = rc.Control(func(fd uintptr) {
				mr := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
				copy(mr.Address[:], lldpNearestBridge)
				serr = unix.SetsockoptPacketMreq(int(fd), unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr)
			})
			if err == nil {
				err = serr
			}
		}
		if err != nil {
			c.Close()
			return err
		}
		conn = c
		return nil
	})
	return conn, err
}

// receive reads LLDPDUs until ctx ends, keeping name's neighbours.
func (l *lldpReceiver) receive(ctx context.Context, name string, conn *packet.Conn) {
	defer conn.Close()
	go func() {
		<-ctx.Done()
		conn.SetReadDeadline(time.Unix(1, 0)) // unblocks ReadFrom
	}()
	neighbors := map[string]LLDPNeighbor{}
	buf := make([]byte, 1600)
	for {
		n, _, err := conn.ReadFrom(buf)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			l.log.Error("lldp receive", "interface", name, "error", err)
			return
		}
		nb, err := lldp.Decode(buf[:n])
		if err != nil {
			l.log.Debug("lldp: bad LLDPDU", "interface", name, "error", err)
			continue
		}
		now := l.now()
		for k, v := range neighbors {
			if !v.Expires.After(now) {
				delete(neighbors, k)
			}
		}
		if nb.TTL == 0 {
			delete(neighbors, nb.Key())
		} else {
			neighbors[nb.Key()] = LLDPNeighbor{TLVs: nb.TLVs, Expires: now.Add(time.Duration(nb.TTL) * time.Second)}
		}
		if err := l.inst.WriteLLDPNeighbors(ctx, name, neighbors); err != nil {
			l.log.Error("storing LLDP neighbours", "interface", name, "error", err)
		}
	}
}
