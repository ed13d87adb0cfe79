package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	ownerFile = "owner" // PID of the process that started the control plane
	pidsFile  = "pids"  // PIDs of its children, one a line
)

// guardScript outlives an owner that dies without calling Stop (panic,
// os.Exit, SIGKILL, a test timeout). It reads child PIDs from its stdin; a
// line "stop" means the owner cleaned up itself. End of input without
// "stop" means the owner died: it kills the children that are still ours
// (their command line names our directory, so a recycled PID is never
// hit), waits for them to go, and removes the directory.
const guardScript = `
dir=$1
pids=
while read -r line; do
	[ "$line" = stop ] && exit 0
	pids="$pids $line"
done
ours() { grep -qaF -- "$dir" "/proc/$1/cmdline" 2>/dev/null; }
for p in $pids; do ours "$p" && kill -9 "$p" 2>/dev/null; done
for p in $pids; do
	n=0
	while ours "$p" && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
done
rm -rf "$dir"
`

type guard struct {
	dir string
	w   io.WriteCloser
	cmd *exec.Cmd
}

func startGuard(dir string) (*guard, error) {
	cmd := exec.Command("/bin/sh", "-c", guardScript, "testenv-guard", dir)
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	// Its own process group and no parent-death signal: it must survive
	// its owner. No stdout/stderr either, so `go test` does not wait for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start guard: %w", err)
	}
	return &guard{dir: dir, w: w, cmd: cmd}, nil
}

// watch hands a child PID to the guard and records it for stale clean-up.
func (g *guard) watch(pid int) error {
	line := strconv.Itoa(pid) + "\n"
	if _, err := io.WriteString(g.w, line); err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(g.dir, pidsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("record pid: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("record pid: %w", err)
	}
	return nil
}

// release tells the guard the owner has cleaned up, and waits for it.
func (g *guard) release() error {
	_, werr := io.WriteString(g.w, "stop\n")
	cerr := g.w.Close()
	if err := g.cmd.Wait(); err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	return errors.Join(werr, cerr)
}

// removeStale removes the directories (and kills the leftover children) of
// control planes whose owner process is gone: those the guard could not
// clean up, for instance after a reboot-free SIGKILL of the guard itself.
// Directories of live owners are never touched.
func removeStale(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, ent := range entries {
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), dirPrefix) {
			continue
		}
		dir := filepath.Join(root, ent.Name())
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			// Being created right now, or not ours: leave young ones.
			if info, err := ent.Info(); err != nil || time.Since(info.ModTime()) < time.Hour {
				continue
			}
		} else if pid, err := strconv.Atoi(strings.TrimSpace(string(owner))); err == nil && alive(pid) {
			continue
		}
		for _, l := range readLines(filepath.Join(dir, pidsFile)) {
			if pid, err := strconv.Atoi(l); err == nil && cmdlineMentions(pid, dir) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(dir)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// cmdlineMentions reports whether process pid runs with s in its command
// line (a live process of ours, not a recycled PID).
func cmdlineMentions(pid int, s string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte(s))
}
