package remoteexec

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const token = "s3cret"

// newServer serves exec requests running Args on this machine; target
// "refuse" is refused. Started commands are sent to started.
func newServer(t *testing.T, started chan<- *exec.Cmd) string {
	t.Helper()
	s := &Server{
		Token: token,
		Command: func(r Request) (*exec.Cmd, error) {
			if r.Target == "refuse" {
				return nil, errors.New("no such target")
			}
			return exec.Command(r.Args[0], r.Args[1:]...), nil
		},
		Start: func(_ Request, c *exec.Cmd) error {
			err := c.Start()
			if err == nil && started != nil {
				started <- c
			}
			return err
		},
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestRun(t *testing.T) {
	addr := newServer(t, nil)
	tests := []struct {
		name           string
		token          string
		req            Request
		stdin          string
		wantCode       int
		wantOut        string
		wantErrOut     string
		wantErrContain string
	}{
		{name: "stdout and status 0", token: token, req: Request{Args: []string{"echo", "hello"}}, wantOut: "hello\n"},
		{name: "stderr and a status", token: token, req: Request{Args: []string{"sh", "-c", "echo oops >&2; exit 3"}}, wantCode: 3, wantErrOut: "oops\n"},
		{name: "stdin", token: token, req: Request{Args: []string{"cat"}}, stdin: "line 1\nline 2\n", wantOut: "line 1\nline 2\n"},
		{name: "large output", token: token, req: Request{Args: []string{"head", "-c", "3000000", "/dev/zero"}}, wantOut: strings.Repeat("\x00", 3000000)},
		{name: "wrong token", token: "guess", req: Request{Args: []string{"true"}}, wantErrContain: "401"},
		{name: "refused target", token: token, req: Request{Target: "refuse", Args: []string{"true"}}, wantErrContain: "no such target"},
		{name: "missing program", token: token, req: Request{Args: []string{"/nonexistent/program"}}, wantErrContain: "starting /nonexistent/program"},
		{name: "no command", token: token, req: Request{}, wantErrContain: "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			code, err := Run(ctx, addr, tt.token, tt.req, strings.NewReader(tt.stdin), &out, &errOut)
			if tt.wantErrContain != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrContain) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErrContain)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%.500s", diff)
			}
			if diff := cmp.Diff(tt.wantErrOut, errOut.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancelKillsTheCommand: a client that goes away takes its command
// with it.
func TestCancelKillsTheCommand(t *testing.T) {
	started := make(chan *exec.Cmd, 1)
	addr := newServer(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var out bytes.Buffer
		_, err := Run(ctx, addr, token, Request{Args: []string{"sleep", "60"}}, nil, &out, &out)
		errc <- err
	}()
	var cmd *exec.Cmd
	select {
	case cmd = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not start")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
	// The server reaps it once it is killed: then the PID is gone.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(cmd.Process.Pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the command still runs 10 s after its client went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
