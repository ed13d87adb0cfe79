package remoteexec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types.
const (
	frameStdin    byte = 0
	frameStdout   byte = 1
	frameStderr   byte = 2
	frameExit     byte = 3 // payload: 4-byte big-endian exit status
	frameStdinEOF byte = 4
	frameError    byte = 5 // payload: message
)

// maxFrame bounds a frame's payload.
const maxFrame = 1 << 20

// frameWriter writes whole frames from several goroutines.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) write(kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(h[:]); err != nil {
		return err
	}
	_, err := f.w.Write(p)
	return err
}

// streamWriter is an io.Writer sending each write as frames of one kind.
type streamWriter struct {
	f    *frameWriter
	kind byte
}

func (s streamWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), maxFrame)
		if err := s.f.write(s.kind, p[:c]); err != nil {
			return n, err
		}
		n += c
		p = p[c:]
	}
	return n, nil
}

// readFrame reads one frame.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes is too large", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}
