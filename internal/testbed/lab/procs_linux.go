package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// spawner forks children from one locked OS thread that lives as long as
// the lab: Pdeathsig fires when the forking *thread* ends, so children
// forked from ordinary Go threads could die at a random moment. With a
// namespace the thread is switched into it once, and every child starts
// there.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner(netnsPath string) (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(s.done)
		runtime.LockOSThread()
		var orig netns.NsHandle = -1
		if netnsPath != "" {
			var err error
			if orig, err = netns.Get(); err != nil {
				ready <- fmt.Errorf("spawner: reading the thread's namespace: %w", err)
				return
			}
			target, err := netns.GetFromPath(netnsPath)
			if err != nil {
				orig.Close()
				runtime.UnlockOSThread()
				ready <- fmt.Errorf("spawner: opening %s: %w", netnsPath, err)
				return
			}
			err = netns.Set(target)
			target.Close()
			if err != nil {
				ready <- fmt.Errorf("spawner: entering %s: %w", netnsPath, err)
				return // thread stays locked and is discarded
			}
		}
		ready <- nil
		for r := range s.reqs {
			r.err <- r.cmd.Start()
		}
		if orig >= 0 {
			ok := netns.Set(orig) == nil
			orig.Close()
			if !ok {
				return // discarded with the goroutine
			}
		}
		runtime.UnlockOSThread()
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return s, nil
}

// newNodeSpawner is a spawner whose children start inside a node's
// network, mount and UTS namespaces (files as labnet.Node gives them).
// Its thread joins them for good: a thread that changed its mount
// namespace cannot share the process's filesystem context again, so it
// is discarded when the spawner closes.
func newNodeSpawner(netnsPath, mountNS, utsNS string) (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(s.done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := func() error {
			// Every file is opened first: the UTS file is not visible
			// inside the node's mount namespace.
			var fds []int
			defer func() {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}()
			for _, p := range []string{netnsPath, mountNS, utsNS} {
				fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("spawner: opening %s: %w", p, err)
				}
				fds = append(fds, fd)
			}
			// setns into a mount namespace needs a filesystem context of
			// the thread's own.
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("spawner: unshare fs: %w", err)
			}
			for i, kind := range []int{unix.CLONE_NEWNET, unix.CLONE_NEWNS, unix.CLONE_NEWUTS} {
				if err := unix.Setns(fds[i], kind); err != nil {
					return fmt.Errorf("spawner: entering the node's namespace %d: %w", i, err)
				}
			}
			return nil
		}()
		ready <- err
		if err != nil {
			return
		}
		for r := range s.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return s, nil
}

func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.reqs <- r
	return <-r.err
}

// close ends the thread once every child is gone.
func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}

// proc is one supervised child process: restarted with back-off when it
// exits while the lab runs, like a kubelet restarting a pod's container.
type proc struct {
	name    string
	where   string
	bin     string
	args    []string
	logPath string
	spawner *spawner
	// cloneflags are extra namespaces the process gets at birth
	// (CLONE_NEWPID for a node's init).
	cloneflags uintptr
	// once: not restarted when it exits (the guest's qemu: a new guest
	// would have none of the lab's state); exited is called then.
	once   bool
	exited func(status string)
	// changed is called after every status change.
	changed func()
	// cancel stops this process alone (the supervisor sets it).
	cancel context.CancelFunc

	mu       sync.Mutex
	pid      int
	status   string
	restarts int
	stopped  chan struct{}
	// heldUntil keeps the process down after it exits (lab kill --for).
	heldUntil time.Time
}

// kill SIGKILLs the running process, as a crash would end it, and keeps
// it from being restarted for hold; it returns the PID it killed, 0 when
// none was running (between two restarts: it is held down all the same).
func (p *proc) kill(hold time.Duration) (int, error) {
	p.mu.Lock()
	pid := p.pid
	p.heldUntil = time.Now().Add(hold)
	p.mu.Unlock()
	if pid <= 0 {
		return 0, nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("killing %s (pid %d): %w", p.name, pid, err)
	}
	return pid, nil
}

// held is how long the process must stay down yet.
func (p *proc) held() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Until(p.heldUntil)
}

func (p *proc) snapshot() Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Process{Name: p.name, PID: p.pid, Where: p.where, Status: p.status, Restarts: p.restarts, Log: p.logPath}
}

func (p *proc) set(pid int, status string, restart bool) {
	p.mu.Lock()
	p.pid, p.status = pid, status
	if restart {
		p.restarts++
	}
	p.mu.Unlock()
	if p.changed != nil {
		p.changed()
	}
}

// startOnce starts the process and returns a channel closed when it has
// been reaped.
func (p *proc) startOnce() (*exec.Cmd, chan struct{}, error) {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%s log: %w", p.name, err)
	}
	defer log.Close()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Cloneflags: p.cloneflags}
	if err := p.spawner.start(cmd); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd, done, nil
}

// run keeps the process running until ctx ends, then stops it (SIGTERM,
// SIGKILL after 5s) and returns once it is reaped. A process run once
// is not restarted.
func (p *proc) run(ctx context.Context) {
	defer close(p.stopped)
	backoff := 500 * time.Millisecond
	for first := true; ; first = false {
		var status string
		cmd, done, err := p.startOnce()
		if err != nil {
			status = "exited: " + err.Error()
		} else {
			p.set(cmd.Process.Pid, "running", !first)
			started := time.Now()
			select {
			case <-done:
				status = "exited: " + exitText(cmd, p.logPath)
				if time.Since(started) > time.Minute {
					backoff = 500 * time.Millisecond
				}
			case <-ctx.Done():
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-done
				}
				p.set(0, "stopped", false)
				return
			}
		}
		p.set(0, status, false)
		if p.once {
			if p.exited != nil {
				p.exited(status)
			}
			<-ctx.Done()
			return
		}
		// A kill with a hold keeps it down that long; the back-off then
		// starts from where a crash would have left it.
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(backoff, p.held())):
		}
		// A hold set during the back-off counts too.
		for d := p.held(); d > 0; d = p.held() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// exitText is the exit status and the last log line.
func exitText(cmd *exec.Cmd, logPath string) string {
	s := cmd.ProcessState.String()
	if b, err := os.ReadFile(logPath); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if last := lines[len(lines)-1]; last != "" {
			s += ": " + last
		}
	}
	return s
}
