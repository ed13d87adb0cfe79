package remoteexec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Run runs req on the server at addr (host:port, plain TCP) with the
// token, streaming stdin (nil: none) to it and its output to stdout and
// stderr, and returns the command's exit status. Cancelling ctx closes the
// connection, which kills the command.
func Run(ctx context.Context, addr, token string, req Request, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("exec: connecting to %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	hr, err := http.NewRequest(http.MethodPost, "http://"+addr+"/exec", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Connection", "Upgrade")
	hr.Header.Set("Upgrade", Upgrade)
	hr.Header.Set("Content-Type", "application/json")
	if err := hr.Write(conn); err != nil {
		return 0, ctxErr(ctx, fmt.Errorf("exec: sending the request: %w", err))
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, hr)
	if err != nil {
		return 0, ctxErr(ctx, fmt.Errorf("exec: reading the answer: %w", err))
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return 0, fmt.Errorf("exec: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	fw := &frameWriter{w: conn}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(streamWriter{fw, frameStdin}, stdin)
		}
		_ = fw.write(frameStdinEOF, nil)
	}()
	for {
		kind, p, err := readFrame(br)
		if err != nil {
			return 0, ctxErr(ctx, fmt.Errorf("exec: connection lost before the command ended: %w", err))
		}
		switch kind {
		case frameStdout:
			if _, err := stdout.Write(p); err != nil {
				return 0, err
			}
		case frameStderr:
			if _, err := stderr.Write(p); err != nil {
				return 0, err
			}
		case frameError:
			return 0, fmt.Errorf("exec: %s", p)
		case frameExit: // the deferred Close tells the server we are done
			if len(p) != 4 {
				return 0, errors.New("exec: malformed exit frame")
			}
			return int(int32(binary.BigEndian.Uint32(p))), nil
		}
	}
}

// ctxErr prefers the context's error to the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("exec: %w", ctx.Err())
	}
	return err
}
