package ovsrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/knmstate/knmstate/pkg/nsrun"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// Options say where a private OVS runs.
type Options struct {
	// Dir holds the database, the sockets, pid files and logs; it must exist.
	Dir string
	// NetNS is the network namespace (name or path) ovs-vswitchd runs in;
	// "" is the caller's, which only a test-free tool should want.
	NetNS string
	// NoVSwitchd starts the database server alone (for client tests).
	NoVSwitchd bool
	// Schema is the vswitch schema file (default Debian's).
	Schema string
	// StartTimeout bounds each daemon's start (default 20s).
	StartTimeout time.Duration
}

// DefaultSchema is where Debian's openvswitch-common installs the schema.
const DefaultSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// OVS is a running private Open vSwitch.
type OVS struct {
	Dir string
	// Address is the database socket in ovsdb's syntax ("unix:DIR/db.sock").
	Address string

	procs []*exec.Cmd
	dones []chan struct{}
	// spawn runs functions on one OS thread kept for this OVS until
	// Stop: the daemons die with that thread (Pdeathsig), and the Go
	// runtime ends threads on its own terms (a goroutine that exits with
	// its thread locked, as one that unshared a namespace does, takes the
	// thread with it), so they must not be started from a pooled one.
	spawn chan func()
}

// Start creates the database, starts ovsdb-server, initialises the
// Open_vSwitch row and (unless NoVSwitchd) starts ovs-vswitchd in
// opts.NetNS and waits until it has read its configuration. On error
// everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *OVS, err error) {
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 20 * time.Second
	}
	o := &OVS{Dir: opts.Dir, Address: "unix:" + filepath.Join(opts.Dir, "db.sock"), spawn: make(chan func())}
	go func() {
		// Never unlocked: the thread ends with this goroutine, when Stop
		// closes spawn after the daemons have exited.
		runtime.LockOSThread()
		for f := range o.spawn {
			f()
		}
	}()
	defer func() {
		if err != nil {
			_ = o.Stop()
		}
	}()
	db := filepath.Join(opts.Dir, "conf.db")
	if _, statErr := os.Stat(db); errors.Is(statErr, os.ErrNotExist) {
		if out, err := exec.CommandContext(ctx, "ovsdb-tool", "create", db, opts.Schema).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("creating the OVS database: %w: %s", err, strings.TrimSpace(string(out)))
		}
		// The root row goes in before the server listens: a client that
		// connects at once (a node runtime, a handler) never sees a
		// database without it.
		insert := `["Open_vSwitch",{"op":"insert","table":"Open_vSwitch","row":{}}]`
		if out, err := exec.CommandContext(ctx, "ovsdb-tool", "transact", db, insert).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initialising the OVS database: %w: %s", err, strings.TrimSpace(string(out)))
		}
	}
	if err := o.start("", "ovsdb-server", db,
		"--remote=punix:"+filepath.Join(opts.Dir, "db.sock"),
		"--pidfile="+filepath.Join(opts.Dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(opts.Dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(opts.Dir, "ovsdb-server.log"),
		"--no-chdir"); err != nil {
		return nil, err
	}
	c, err := o.dial(ctx, opts.StartTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := initDB(ctx, c); err != nil {
		return nil, err
	}
	if opts.NoVSwitchd {
		return o, nil
	}
	if err := o.start(opts.NetNS, "ovs-vswitchd", o.Address,
		"--pidfile="+filepath.Join(opts.Dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(opts.Dir, "ovs-vswitchd.ctl"),
		"--log-file="+filepath.Join(opts.Dir, "ovs-vswitchd.log"),
		"--no-chdir"); err != nil {
		return nil, err
	}
	if err := waitVSwitchd(ctx, c, opts.StartTimeout); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, filepath.Join(opts.Dir, "ovs-vswitchd.log"))
	}
	return o, nil
}

// start runs one daemon in the foreground (no --detach: it is our child,
// dies with us through Pdeathsig, and Stop reaps it), inside netns through
// nsenter (which execs it: the pid is the daemon's), so no thread of ours
// switches namespaces for it.
func (o *OVS) start(netns, name string, args ...string) error {
	bin := name
	if netns != "" {
		args = append([]string{"--net=" + nsrun.File(netns), "--", name}, args...)
		bin = "nsenter"
	}
	cmd := exec.Command(bin, args...)
	// OVS_RUNDIR etc. keep the bridges' management sockets and any other
	// file the daemon makes in Dir rather than /run/openvswitch.
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+o.Dir, "OVS_LOGDIR="+o.Dir, "OVS_DBDIR="+o.Dir,
		"OVS_SYSCONFDIR="+o.Dir, "OVS_PKGDATADIR="+filepath.Dir(DefaultSchema))
	stderr, err := os.Create(filepath.Join(o.Dir, name+".stderr"))
	if err != nil {
		return fmt.Errorf("%s stderr file: %w", name, err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	errc := make(chan error, 1)
	o.spawn <- func() { errc <- cmd.Start() }
	if err := <-errc; err != nil {
		return fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	o.procs = append(o.procs, cmd)
	o.dones = append(o.dones, done)
	return nil
}

// dial connects to the database server, retrying until it listens.
func (o *OVS) dial(ctx context.Context, timeout time.Duration) (*ovsdb.Client, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := ovsdb.Dial(ctx, o.Address)
		if err == nil {
			return c, nil
		}
		select {
		case <-o.dones[0]:
			return nil, fmt.Errorf("ovsdb-server exited: %s", o.tail("ovsdb-server.stderr"))
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("ovsdb-server did not listen in %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (o *OVS) tail(name string) string {
	b, _ := os.ReadFile(filepath.Join(o.Dir, name))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// initDB inserts the Open_vSwitch root row when there is none, as
// `ovs-vsctl init` does.
func initDB(ctx context.Context, c *ovsdb.Client) error {
	res, err := c.Transact(ctx, "Open_vSwitch", ovsdb.Operation{Op: "select", Table: "Open_vSwitch", Columns: []string{"_uuid"}})
	if err != nil {
		return fmt.Errorf("reading the Open_vSwitch table: %w", err)
	}
	if len(res[0].Rows) > 0 {
		return nil
	}
	if _, err := c.Transact(ctx, "Open_vSwitch", ovsdb.Operation{Op: "insert", Table: "Open_vSwitch", Row: map[string]any{}}); err != nil {
		return fmt.Errorf("initialising the Open_vSwitch table: %w", err)
	}
	return nil
}

// waitVSwitchd waits until ovs-vswitchd has connected and reported the
// interface types it supports, which it does once configured.
func waitVSwitchd(ctx context.Context, c *ovsdb.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		res, err := c.Transact(ctx, "Open_vSwitch", ovsdb.Operation{Op: "select", Table: "Open_vSwitch", Columns: []string{"iface_types"}})
		if err != nil {
			return err
		}
		if len(res[0].Rows) > 0 && len(res[0].Rows[0].Strings("iface_types")) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovs-vswitchd did not start in %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends the daemons (SIGTERM, SIGKILL after 5s), ovs-vswitchd first,
// and waits for them. ovs-vswitchd removes its internal ports on exit; a
// netdev datapath's taps go with it.
func (o *OVS) Stop() error {
	var errs []error
	for i := len(o.procs) - 1; i >= 0; i-- {
		cmd, done := o.procs[i], o.dones[i]
		select {
		case <-done:
			continue
		default:
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	o.procs, o.dones = nil, nil
	if o.spawn != nil {
		close(o.spawn)
		o.spawn = nil
	}
	return errors.Join(errs...)
}
