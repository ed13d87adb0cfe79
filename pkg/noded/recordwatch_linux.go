package noded

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchRecord signals whenever a new record is renamed into stateDir (as
// WriteRecord does), so a runtime picks a submission up at once instead of
// at its next poll. The signals are coalesced; the channel closes when ctx
// ends or the watch fails. The runtime's own writes signal too, and find
// nothing new.
func watchRecord(ctx context.Context, stateDir string) (<-chan struct{}, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, stateDir, unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watching %s: %w", stateDir, err)
	}
	// Through the runtime's poller, so Close ends a pending Read.
	f := os.NewFile(uintptr(fd), "inotify:"+stateDir)
	ch := make(chan struct{}, 1)
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if recordRenamed(buf[:n]) {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch, nil
}

// recordRenamed reports whether a buffer of inotify events names the
// record file.
func recordRenamed(buf []byte) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			return false
		}
		name := buf[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if string(name) == RecordFile {
			return true
		}
		buf = buf[end:]
	}
	return false
}
