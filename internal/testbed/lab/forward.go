package lab

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
)

// forwarder accepts TCP connections and joins each to a connection dialed
// by dial. On this machine's loopback, dialing from inside the switch
// namespace, it is kubectl's way to an API server that listens only there
// (the lab's only object in the host's network namespace); in guest mode
// it listens at the API server's address in the guest's switch namespace
// and dials this machine's loopback through qemu (the nodes' way to an
// API server that runs outside the guest). TLS passes through untouched.
type forwarder struct {
	ln     net.Listener
	target string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	log    *slog.Logger

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// newForwarder forwards the connections of ln to target; serve closes ln.
func newForwarder(ln net.Listener, target string, dial func(ctx context.Context, network, addr string) (net.Conn, error), log *slog.Logger) *forwarder {
	return &forwarder{ln: ln, target: target, dial: dial, log: log, conns: map[net.Conn]struct{}{}}
}

// Addr is the listening address, host:port.
func (f *forwarder) Addr() string { return f.ln.Addr().String() }

// serve accepts until ctx ends, then closes every connection and returns
// once all are gone.
func (f *forwarder) serve(ctx context.Context) {
	go func() {
		<-ctx.Done()
		f.ln.Close()
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.conns = nil // later connections are refused by track
		f.mu.Unlock()
	}()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				f.log.Error("forwarder accept", "err", err)
			}
			break
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.handle(ctx, c)
		}()
	}
	f.wg.Wait()
}

// track adds (on) or removes a connection; false once the forwarder is
// closing, for a connection that must not start.
func (f *forwarder) track(c net.Conn, on bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		if f.conns == nil {
			return false
		}
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	if !f.track(c, true) {
		return
	}
	defer f.track(c, false)
	up, err := f.dial(ctx, "tcp", f.target)
	if err != nil {
		f.log.Error("forwarder dial", "target", f.target, "err", err)
		return
	}
	defer up.Close()
	if !f.track(up, true) {
		return
	}
	defer f.track(up, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close so the other direction can finish (TLS close_notify).
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
