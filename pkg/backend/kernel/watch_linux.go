package kernel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// watchGroups are the rtnetlink multicast groups whose messages can change
// what Show reports: links, addresses, routes, rules, and the per-device
// netconf (forwarding) of both families.
func watchGroups() []uint {
	return []uint{
		unix.RTNLGRP_LINK,
		unix.RTNLGRP_IPV4_IFADDR,
		unix.RTNLGRP_IPV6_IFADDR,
		unix.RTNLGRP_IPV4_ROUTE,
		unix.RTNLGRP_IPV6_ROUTE,
		unix.RTNLGRP_IPV4_RULE,
		unix.RTNLGRP_IPV6_RULE,
		unix.RTNLGRP_IPV4_NETCONF,
		unix.RTNLGRP_IPV6_NETCONF,
	}
}

// Watch reports that something Show reads may have changed: any rtnetlink
// notification of the namespace's links, addresses, routes, rules or
// netconf, and any change of the resolv.conf file (if configured). The
// channel carries no detail and coalesces: one pending signal stands for
// any number of changes, so a slow reader never blocks the kernel socket.
// A receive-buffer overflow (ENOBUFS: notifications were lost) is also a
// signal. The hostname has no notification; callers resync periodically.
//
// The subscription socket is opened inside the namespace, so it sees that
// namespace's notifications only. The channel is closed when ctx ends or
// the subscription fails for good; Watch must return before Close.
func (b *Backend) Watch(ctx context.Context) (<-chan struct{}, error) {
	var sock *nl.NetlinkSocket
	err := b.inNetNS(func() error {
		var err error
		sock, err = nl.Subscribe(unix.NETLINK_ROUTE, watchGroups()...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to rtnetlink notifications in %s: %w", nsPath(b.opts.NetNS), err)
	}
	// Bursts (a bridge with many ports going down) must not overflow the
	// default buffer too easily; an overflow is still handled.
	_ = sock.SetReceiveBufferSize(1<<20, false)

	var inos []fileWatch
	files := []string{}
	if b.opts.ResolvConf != "" {
		files = append(files, b.opts.ResolvConf)
	}
	if b.opts.LLDPDir != "" {
		// The node runtime writes the neighbours it hears there.
		if err := os.MkdirAll(b.opts.LLDPDir, 0o755); err != nil {
			sock.Close()
			return nil, err
		}
		files = append(files, filepath.Join(b.opts.LLDPDir, "*.json"))
	}
	for _, f := range files {
		var ino fileWatch
		ino, err := newInotifyWatch(f)
		if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOMEM) {
			// Inotify instances are limited per user across the machine
			// (fs.inotify.max_user_instances, 128 by default), not per
			// process: when other programs used them up, polling the file
			// beats failing (a handler restarting in a loop reports
			// nothing at all).
			ino, err = newPollWatch(f, resolvConfPoll), nil
		}
		if err != nil {
			sock.Close()
			for _, w := range inos {
				w.close()
			}
			return nil, err
		}
		inos = append(inos, ino)
	}

	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			_, _, err := sock.Receive()
			switch {
			case err == nil, errors.Is(err, unix.ENOBUFS):
				signal()
			case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			default:
				// Closed by the ctx goroutine below, or a dead socket.
				return
			}
		}
	}()
	for _, ino := range inos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ino.run(signal)
		}()
	}
	go func() {
		<-ctx.Done()
		sock.Close()
		for _, ino := range inos {
			ino.close()
		}
		wg.Wait()
		close(out)
	}()
	return out, nil
}

// fileWatch follows one file: run signals its changes until close.
type fileWatch interface {
	run(signal func())
	close()
}

// resolvConfPoll is how often resolv.conf (and the LLDP neighbour files)
// are polled when inotify is not available: DNS settings change rarely,
// and a second is within the reporting latency the handler aims at.
const resolvConfPoll = time.Second

// pollWatch follows one file by comparing its inode, size and times at
// every tick: the fallback when no inotify instance is left. A pattern
// (inotifyWatch's) is followed by its directory's stamp: its writers
// replace files by rename, which changes the directory.
type pollWatch struct {
	path   string
	period time.Duration
	stop   chan struct{}
	once   sync.Once
}

func newPollWatch(path string, period time.Duration) *pollWatch {
	if strings.ContainsAny(filepath.Base(path), "*?[") {
		path = filepath.Dir(path)
	}
	return &pollWatch{path: path, period: period, stop: make(chan struct{})}
}

// fileStamp identifies a version of a file; the zero value is "missing".
type fileStamp struct {
	ino, size        uint64
	mtimeNs, ctimeNs int64
}

func stampOf(path string) fileStamp {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{ino: st.Ino, size: uint64(st.Size), mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano()}
}

func (w *pollWatch) run(signal func()) {
	last := stampOf(w.path)
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if w.changed(&last) {
				signal()
			}
		}
	}
}

// changed compares the file's stamp with last, which it updates.
func (w *pollWatch) changed(last *fileStamp) bool {
	cur := stampOf(w.path)
	if cur == *last {
		return false
	}
	*last = cur
	return true
}

func (w *pollWatch) close() { w.once.Do(func() { close(w.stop) }) }

// inotifyWatch follows one file that may be replaced by rename (atomic
// writers) or rewritten in place (a bind-mounted file): it watches the
// directory for entries of that name and the file's current inode. The
// name may be a pattern (filepath.Match): then every matching entry of
// the directory counts.
type inotifyWatch struct {
	f    *os.File
	fd   int
	dir  int32 // watch descriptor of the directory
	path string
	name string
}

func newInotifyWatch(path string) (*inotifyWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify for %s: %w", path, err)
	}
	w := &inotifyWatch{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, path: path, name: filepath.Base(path)}
	const dirMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_CLOSE_WRITE | unix.IN_MODIFY
	wd, err := unix.InotifyAddWatch(fd, filepath.Dir(path), dirMask)
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("watching directory of %s: %w", path, err)
	}
	w.dir = int32(wd)
	w.watchFile()
	return w, nil
}

// watchFile adds a watch on the file's current inode (a new inode gets a
// new watch; the old one goes away with its inode). A missing file is
// fine: the directory watch sees it appear.
func (w *inotifyWatch) watchFile() {
	_, _ = unix.InotifyAddWatch(w.fd, w.path, unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_ATTRIB)
}

// run reads events until the file is closed, signalling for those about
// the file.
func (w *inotifyWatch) run(signal func()) {
	raw, err := w.f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)
			return rerr != unix.EAGAIN
		})
		if err != nil || (rerr != nil && rerr != unix.EINTR) {
			return
		}
		if w.handle(buf[:max(n, 0)]) {
			signal()
		}
	}
}

// handle reads one batch of inotify events and reports whether one is
// about the file (or the pattern); a replaced file gets a new watch.
func (w *inotifyWatch) handle(buf []byte) (relevant bool) {
	n := len(buf)
	replaced := false
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		// struct inotify_event: wd int32, mask, cookie, len uint32, name.
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen], "\x00"))
		off += unix.SizeofInotifyEvent + nameLen
		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			relevant, replaced = true, true
		case mask&unix.IN_IGNORED != 0:
		case wd == w.dir:
			if ok, _ := filepath.Match(w.name, name); ok {
				relevant, replaced = true, true
			}
		default: // the file's own inode
			relevant = true
		}
	}
	if replaced {
		w.watchFile()
	}
	return relevant
}

func (w *inotifyWatch) close() { w.f.Close() }
