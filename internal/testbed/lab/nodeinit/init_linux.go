package nodeinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Run is the init: it makes the mounts, starts the daemons and keeps them
// running until ctx ends or the process gets SIGTERM or SIGINT, then stops
// them. It reaps every child, its own and orphans: as PID 1 of a PID
// namespace orphans are re-parented to it, elsewhere it makes itself a
// child subreaper so they still are. Nothing else in the process may wait
// for children while Run runs.
func Run(ctx context.Context, spec *Spec, log *slog.Logger) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	// Signals first: a child that exits before Notify would never be
	// reaped.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(sigs)

	in := &initProc{spec: spec, log: log, exits: map[int]unix.WaitStatus{}}
	in.grace = time.Duration(spec.StopGrace)
	if in.grace == 0 {
		in.grace = 10 * time.Second
	}
	for _, d := range spec.Daemons {
		in.daemons = append(in.daemons, &daemon{Daemon: d, backoff: 500 * time.Millisecond})
	}
	in.setPhase("mounting")
	if len(spec.Mounts) > 0 {
		// Nothing mounted here may propagate to the mount namespace this
		// one was copied from (the lab's node namespace is a slave
		// already; this also holds when the init made its own).
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("making / a slave mount: %w", err)
		}
	}
	for i, m := range spec.Mounts {
		if err := mount(m); err != nil {
			return fmt.Errorf("mounts[%d]: %w", i, err)
		}
	}
	in.setPhase("starting")
	stop := make(chan struct{})
	var stopOnce sync.Once
	requestStop := func() { stopOnce.Do(func() { close(stop) }) }
	go func() {
		select {
		case <-ctx.Done():
			requestStop()
		case <-stop:
		}
	}()

	// The start sequence runs beside the signal loop, which reaps while
	// a daemon is being waited for.
	started := make(chan error, 1)
	go func() { started <- in.startAll(stop) }()
	restart := time.NewTicker(100 * time.Millisecond)
	defer restart.Stop()
	for {
		select {
		case s := <-sigs:
			if s == unix.SIGCHLD {
				in.reap()
				continue
			}
			log.Info("stopping on signal", "signal", s.String())
			requestStop()
		case err := <-started:
			if err != nil {
				log.Error("start failed", "err", err)
				requestStop()
				in.stopAll(sigs)
				return err
			}
			in.setPhase("running")
			started = nil
		case <-restart.C:
			if started == nil {
				in.restartExited()
			}
		case <-stop:
			if started != nil {
				// The start sequence sees stop and ends.
				<-started
			}
			in.stopAll(sigs)
			return nil
		}
	}
}

// initProc is the state of one Run.
type initProc struct {
	spec    *Spec
	log     *slog.Logger
	grace   time.Duration
	mu      sync.Mutex
	daemons []*daemon
	phase   string
	// exits holds statuses reaped before the start sequence recorded the
	// PID (a daemon that died at once).
	exits map[int]unix.WaitStatus
}

type daemon struct {
	Daemon
	pid      int
	restarts int
	lastExit string
	exitedAt time.Time
	backoff  time.Duration
	// up: started once by the start sequence (restarts only then).
	up bool
}

// startAll starts the daemons in order, each after the previous is ready.
func (in *initProc) startAll(stop <-chan struct{}) error {
	for _, d := range in.daemons {
		if err := in.start(d); err != nil {
			return err
		}
		if d.Ready == "" {
			continue
		}
		timeout := time.Duration(d.ReadyTimeout)
		if timeout == 0 {
			timeout = time.Minute
		}
		deadline := time.Now().Add(timeout)
		for {
			if _, err := os.Stat(d.Ready); err == nil {
				break
			}
			in.mu.Lock()
			exited, last := d.pid == 0, d.lastExit
			in.mu.Unlock()
			if exited {
				return fmt.Errorf("%s exited before it was ready (%s): see %s", d.Name, last, d.Log)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not ready after %v (no %s): see %s", d.Name, timeout, d.Ready, d.Log)
			}
			select {
			case <-stop:
				return nil
			case <-time.After(20 * time.Millisecond):
			}
		}
		in.log.Info("daemon ready", "daemon", d.Name)
	}
	return nil
}

// start starts one daemon.
func (in *initProc) start(d *daemon) error {
	log, err := os.OpenFile(d.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s log: %w", d.Name, err)
	}
	defer log.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	dir := d.Dir
	if dir == "" {
		dir = "/"
	}
	env := d.Env
	if env == nil {
		env = []string{}
	}
	// No parent-death signal: the daemons die with the node's PID
	// namespace when the init ends, and a signal tied to the forking
	// thread would kill them at random.
	sys := &syscall.SysProcAttr{Setsid: true}
	if d.PrivateMounts {
		// Go makes every mount of the new namespace private before exec.
		sys.Unshareflags = syscall.CLONE_NEWNS
	}
	p, err := os.StartProcess(d.Path, append([]string{d.Path}, d.Args...), &os.ProcAttr{
		Dir: dir, Env: env, Files: []*os.File{null, log, log}, Sys: sys,
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", d.Name, err)
	}
	pid := p.Pid
	// The status is reaped by the signal loop, never through p.
	_ = p.Release()
	in.mu.Lock()
	d.pid, d.up = pid, true
	if ws, ok := in.exits[pid]; ok {
		delete(in.exits, pid)
		in.exitedLocked(d, ws)
	}
	in.mu.Unlock()
	in.log.Info("daemon started", "daemon", d.Name, "pid", pid)
	in.writeStatus()
	return nil
}

// reap collects every exited child.
func (in *initProc) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		in.mu.Lock()
		var d *daemon
		for _, x := range in.daemons {
			if x.pid == pid {
				d = x
			}
		}
		if d == nil {
			// An orphan, or a daemon whose PID the start sequence has
			// not recorded yet.
			in.exits[pid] = ws
			if len(in.exits) > 1024 {
				clear(in.exits)
			}
		} else {
			in.exitedLocked(d, ws)
		}
		in.mu.Unlock()
		if d != nil {
			in.log.Warn("daemon exited", "daemon", d.Name, "pid", pid, "status", exitText(ws))
			in.writeStatus()
		}
	}
}

func (in *initProc) exitedLocked(d *daemon, ws unix.WaitStatus) {
	d.pid, d.lastExit, d.exitedAt = 0, exitText(ws), time.Now()
}

// restartExited restarts, after their back-off, daemons that exited.
func (in *initProc) restartExited() {
	in.mu.Lock()
	var due []*daemon
	for _, d := range in.daemons {
		if d.up && d.pid == 0 && time.Since(d.exitedAt) >= d.backoff {
			due = append(due, d)
		}
	}
	in.mu.Unlock()
	for _, d := range due {
		in.mu.Lock()
		d.restarts++
		d.backoff = min(2*d.backoff, 30*time.Second)
		in.mu.Unlock()
		if err := in.start(d); err != nil {
			in.log.Error("restart failed", "daemon", d.Name, "err", err)
			in.mu.Lock()
			d.exitedAt = time.Now()
			in.mu.Unlock()
		}
	}
}

// stopAll sends SIGTERM to the daemons, last started first, waits up to
// the grace period while reaping, then kills what is left.
func (in *initProc) stopAll(sigs <-chan os.Signal) {
	in.setPhase("stopping")
	in.mu.Lock()
	for i := len(in.daemons) - 1; i >= 0; i-- {
		if d := in.daemons[i]; d.pid > 0 {
			_ = unix.Kill(d.pid, unix.SIGTERM)
		}
	}
	in.mu.Unlock()
	deadline := time.After(in.grace)
	for !in.allExited() {
		select {
		case <-sigs:
			in.reap()
		case <-time.After(50 * time.Millisecond):
			in.reap()
		case <-deadline:
			in.mu.Lock()
			for _, d := range in.daemons {
				if d.pid > 0 {
					in.log.Warn("killing daemon after grace period", "daemon", d.Name, "pid", d.pid)
					_ = unix.Kill(d.pid, unix.SIGKILL)
				}
			}
			in.mu.Unlock()
			deadline = nil
		}
	}
	in.setPhase("stopped")
}

func (in *initProc) allExited() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, d := range in.daemons {
		if d.pid > 0 {
			return false
		}
	}
	return true
}

func (in *initProc) setPhase(p string) {
	in.mu.Lock()
	in.phase = p
	in.mu.Unlock()
	in.writeStatus()
}

func (in *initProc) writeStatus() {
	if in.spec.StatusFile == "" {
		return
	}
	in.mu.Lock()
	st := Status{InitPID: os.Getpid(), Phase: in.phase}
	for _, d := range in.daemons {
		st.Daemons = append(st.Daemons, DaemonStatus{Name: d.Name, PID: d.pid, Restarts: d.restarts, LastExit: d.lastExit})
	}
	in.mu.Unlock()
	b, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = writeAtomic(in.spec.StatusFile, append(b, '\n'))
	}
	if err != nil {
		in.log.Error("writing status", "err", err)
	}
}

func exitText(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal: " + ws.Signal().String()
	default:
		return fmt.Sprintf("wait status %#x", uint32(ws))
	}
}

// mount makes one mount; a missing directory target is created.
func mount(m Mount) error {
	if m.Type == "proc" {
		// The PID namespace's own view of processes: daemons look
		// themselves up in /proc by the PIDs they know.
		if err := unix.Mount("proc", m.Target, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("proc on %s: %w", m.Target, err)
		}
		return nil
	}
	if m.Type == "tmpfs" {
		if err := os.MkdirAll(m.Target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", m.Target, "tmpfs", 0, m.Data); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", m.Target, err)
		}
		return nil
	}
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("bind source: %w", err)
	}
	if st.IsDir() {
		if err := os.MkdirAll(m.Target, 0o755); err != nil {
			return err
		}
	} else if _, err := os.Stat(m.Target); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(m.Target, nil, 0o644); err != nil {
			return fmt.Errorf("bind target: %w", err)
		}
	}
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", m.Target, err)
		}
	}
	return nil
}

// Describe is a one-line summary of a status for `lab status`.
func (s *Status) Describe() string {
	var parts []string
	for _, d := range s.Daemons {
		p := d.Name + " "
		if d.PID > 0 {
			p += fmt.Sprintf("running (pid %d)", d.PID)
		} else {
			p += "not running"
			if d.LastExit != "" {
				p += " (" + d.LastExit + ")"
			}
		}
		if d.Restarts > 0 {
			p += fmt.Sprintf(", %d restarts", d.Restarts)
		}
		parts = append(parts, p)
	}
	return s.Phase + ": " + strings.Join(parts, "; ")
}
