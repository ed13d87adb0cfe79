package remoteexec

import (
	"bufio"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"time"
)

// Upgrade is the protocol name of the Upgrade header.
const Upgrade = "knmstate-exec"

// Request is what a client asks to run.
type Request struct {
	// Target says where to run it; the server's Command interprets it (the
	// lab: a node's name).
	Target string `json:"target"`
	// Args are the command and its arguments.
	Args []string `json:"args"`
}

// Server runs the commands of authorized requests.
type Server struct {
	// Token authorizes requests (Authorization: Bearer TOKEN); required.
	Token string
	// Command returns the command of a request, not started; its error
	// goes back to the client.
	Command func(Request) (*exec.Cmd, error)
	// Start starts the request's command; default (*exec.Cmd).Start.
	Start func(Request, *exec.Cmd) error
}

// authorized checks the request's bearer token in constant time.
func authorized(r *http.Request, token string) bool {
	want := "Bearer " + token
	return token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) == 1
}

// Authorized reports whether r carries the token: for other endpoints of
// the same server.
func Authorized(r *http.Request, token string) bool { return authorized(r, token) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !authorized(r, s.Token) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Upgrade") != Upgrade {
		http.Error(w, "want POST with Upgrade: "+Upgrade, http.StatusBadRequest)
		return
	}
	var req Request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Args) == 0 {
		http.Error(w, "no command", http.StatusBadRequest)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "connection cannot be taken over", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + Upgrade + "\r\n\r\n"); err != nil {
		return
	}
	if err := rw.Flush(); err != nil {
		return
	}
	fw := &frameWriter{w: conn}
	readerDone := make(chan struct{})
	code, err := s.run(req, rw.Reader, fw, readerDone)
	if err != nil {
		_ = fw.write(frameError, []byte(err.Error()))
	} else {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(int32(code)))
		_ = fw.write(frameExit, b[:])
	}
	// Close only once the client has: closing with its frames unread
	// (its stdin EOF can arrive after the command ended) makes the kernel
	// reset the connection, and a reset can destroy the last frame.
	if tc, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	select {
	case <-readerDone:
	case <-time.After(10 * time.Second):
	}
}

// run runs the request's command with stdin from the client's frames and
// its output to fw; it returns the exit status (-1 for a signal).
// readerDone is closed once the client's side of the connection ends.
func (s *Server) run(req Request, in *bufio.Reader, fw *frameWriter, readerDone chan<- struct{}) (int, error) {
	cmd, err := s.Command(req)
	if err != nil {
		go drain(in, readerDone)
		return 0, err
	}
	cmd.Stdout = streamWriter{fw, frameStdout}
	cmd.Stderr = streamWriter{fw, frameStderr}
	// A background child that keeps the output open must not hold the
	// answer forever.
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		go drain(in, readerDone)
		return 0, err
	}
	start := s.Start
	if start == nil {
		start = func(_ Request, c *exec.Cmd) error { return c.Start() }
	}
	if err := start(req, cmd); err != nil {
		go drain(in, readerDone)
		return 0, fmt.Errorf("starting %s: %w", req.Args[0], err)
	}
	done := make(chan struct{})
	var once sync.Once
	closeStdin := func() { once.Do(func() { stdin.Close() }) }
	// Client frames: stdin until EOF; a lost connection kills the command.
	go func() {
		defer close(readerDone)
		for {
			kind, p, err := readFrame(in)
			if err != nil {
				closeStdin()
				select {
				case <-done:
				default:
					_ = cmd.Process.Kill()
				}
				return
			}
			switch kind {
			case frameStdin:
				if _, err := stdin.Write(p); err != nil {
					closeStdin()
				}
			case frameStdinEOF:
				closeStdin()
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	closeStdin()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return 0, err
	}
	return cmd.ProcessState.ExitCode(), nil
}

// drain reads and drops the client's frames until its side ends.
func drain(in io.Reader, done chan<- struct{}) {
	defer close(done)
	_, _ = io.Copy(io.Discard, in)
}
