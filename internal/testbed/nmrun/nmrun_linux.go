// Package nmrun runs a private NetworkManager for one network namespace:
// its own dbus-daemon (a system bus whose socket lives in a directory of
// ours), and NetworkManager inside the namespace and a private mount
// namespace where /run, /run/NetworkManager, /var/lib/NetworkManager and
// /sys are its own. The tests of pkg/backend/nm, the conformance runs on
// the NetworkManager backend and the lab's --backend networkmanager use
// it.
//
// It never starts, stops or talks to this machine's NetworkManager or
// system bus, never writes below /etc, /run or /var/lib of the machine
// (everything NetworkManager writes goes to Dir), and it ends only the
// processes it started, by PID.
package nmrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Options configure an Instance.
type Options struct {
	// NetNS is the path of the network namespace NetworkManager manages.
	NetNS string
	// Dir holds the bus socket, configuration, keyfiles, run and state
	// directories; it must exist.
	Dir string
	// Unmanaged lists interfaces NetworkManager must leave alone (the
	// link that connects a lab node to its switch).
	Unmanaged []string
	// LogLevel is NetworkManager's log level ("" = INFO).
	LogLevel string
	// Supplicant starts wpa_supplicant on the private bus, in the
	// namespace, for NetworkManager's 802.1X (supplicant_linux.go).
	Supplicant bool
	// OVS, when set, is the directory of a private Open vSwitch (ovsrun's
	// Dir, which holds db.sock): NetworkManager then runs with its OVS
	// device plugin (the build of OVSBuild: Debian's is built without
	// it), and the directory is bound at /run/openvswitch of its mount
	// namespace, where the plugin connects.
	OVS string
	// Build is the NetworkManager with the OVS plugin that Options.OVS
	// runs (nil: OVSBuild's, below the repository).
	Build *Build
}

// Instance is one running private bus and NetworkManager.
type Instance struct {
	opts Options
	// Bus is the D-Bus address of the private system bus.
	Bus string
	// KeyfileDir is the persistent profile directory (NetworkManager's
	// /etc/NetworkManager/system-connections).
	KeyfileDir string
	// RunDir is what NetworkManager sees as /run/NetworkManager (in-memory
	// profiles live in its system-connections).
	RunDir string
	// LibDir is what it sees as /var/lib/NetworkManager.
	LibDir string
	// Log is NetworkManager's output.
	Log string

	mu      sync.Mutex
	spawner *spawner
	bus     *exec.Cmd
	nm      *exec.Cmd
	nmDone  chan struct{}
	wpa     *exec.Cmd
	// ovsBuild is the NetworkManager with the OVS plugin (Options.OVS).
	ovsBuild *Build
}

// Start starts the bus and NetworkManager and waits until NetworkManager
// owns its name on the bus and has finished starting up. The caller must
// Stop the instance, also when Start fails (Stop is safe then).
func Start(ctx context.Context, opts Options) (*Instance, error) {
	if opts.Dir == "" || opts.NetNS == "" {
		return nil, errors.New("nmrun: Dir and NetNS are required")
	}
	in := &Instance{
		opts:       opts,
		KeyfileDir: filepath.Join(opts.Dir, "system-connections"),
		RunDir:     filepath.Join(opts.Dir, "run"),
		LibDir:     filepath.Join(opts.Dir, "lib"),
		Log:        filepath.Join(opts.Dir, "NetworkManager.log"),
	}
	for _, d := range []string{in.KeyfileDir, in.RunDir, in.LibDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("nmrun: %w", err)
		}
	}
	var err error
	if err = in.writeConfigs(); err != nil {
		return nil, err
	}
	if opts.OVS != "" {
		in.ovsBuild = opts.Build
		if in.ovsBuild == nil {
			if in.ovsBuild, err = OVSBuild(); err != nil {
				return nil, err
			}
		}
	}
	sp, err := newSpawner(opts.NetNS)
	if err != nil {
		return nil, err
	}
	in.spawner = sp
	if err := in.startBus(); err != nil {
		return in, err
	}
	if err := in.startSupplicant(ctx); err != nil {
		return in, err
	}
	if err := in.startNM(ctx); err != nil {
		return in, err
	}
	return in, nil
}

func (in *Instance) busSocket() string { return filepath.Join(in.opts.Dir, "bus.sock") }

func (in *Instance) writeConfigs() error {
	if err := WriteBusConfig(filepath.Join(in.opts.Dir, "bus.conf"), in.busSocket()); err != nil {
		return err
	}
	return WriteConfig(in.opts.Dir, Config{KeyfileDir: in.KeyfileDir, Unmanaged: in.opts.Unmanaged, LogLevel: in.opts.LogLevel})
}

// WriteBusConfig writes a dbus-daemon configuration of a system bus that
// listens on socket and lets every local client own and call anything
// (the bus serves one NetworkManager and its clients, all root).
func WriteBusConfig(path, socket string) error {
	bus := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=` + socket + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
	if err := os.WriteFile(path, []byte(bus), 0o600); err != nil {
		return fmt.Errorf("nmrun: %w", err)
	}
	return nil
}

// Config is what NetworkManager.conf says beyond the fixed isolation
// settings.
type Config struct {
	// KeyfileDir is the persistent profile directory ([keyfile] path).
	KeyfileDir string
	// Unmanaged lists interface names (globs) NetworkManager leaves alone.
	Unmanaged []string
	// LogLevel is NetworkManager's log level ("" = INFO).
	LogLevel string
}

// WriteConfig writes dir/NetworkManager.conf and makes the empty
// configuration directories (conf.d, sysconf.d) that Command points
// NetworkManager at, so no file of the machine's /etc/NetworkManager or
// /usr/lib/NetworkManager is read.
func WriteConfig(dir string, c Config) error {
	for _, d := range []string{filepath.Join(dir, "conf.d"), filepath.Join(dir, "sysconf.d")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("nmrun: %w", err)
		}
	}
	unmanaged := ""
	if len(c.Unmanaged) > 0 {
		var specs []string
		for _, n := range c.Unmanaged {
			specs = append(specs, "interface-name:"+n)
		}
		unmanaged = "unmanaged-devices=" + strings.Join(specs, ";") + "\n"
	}
	level := c.LogLevel
	if level == "" {
		level = "INFO"
	}
	// dns=default with rc-manager=unmanaged: NetworkManager keeps its DNS
	// configuration (the DnsManager object) but never writes resolv.conf;
	// hostname-mode=none: it never touches the hostname.
	conf := `[main]
plugins=keyfile
no-auto-default=*
auth-polkit=false
dns=default
rc-manager=unmanaged
dhcp=internal
hostname-mode=none

[keyfile]
path=` + c.KeyfileDir + `
` + unmanaged + `
[logging]
level=` + level + `
`
	if err := os.WriteFile(filepath.Join(dir, "NetworkManager.conf"), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("nmrun: %w", err)
	}
	return nil
}

func (in *Instance) startBus() error {
	cmd := exec.Command("dbus-daemon", "--config-file="+filepath.Join(in.opts.Dir, "bus.conf"), "--nofork", "--nopidfile", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(in.opts.Dir, "dbus.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := in.spawner.start(cmd); err != nil {
		return fmt.Errorf("nmrun: starting dbus-daemon: %w", err)
	}
	in.bus = cmd
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("nmrun: dbus-daemon printed no address: %w", err)
	}
	in.Bus = strings.TrimSpace(line)
	go func() { _, _ = bufio.NewReader(out).WriteTo(devNull{}) }()
	return nil
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// runScript gives NetworkManager (the child was created with a mount
// namespace of its own) a tmpfs /run (the machine's /run has no
// NetworkManager directory, and NetworkManager's pid file and resolv.conf
// copy must not land there) and our run and lib directories bound over the
// compile-time paths.
const runScript = `set -e
mount -t tmpfs -o mode=0755 knmstate-run /run
mkdir -p /run/NetworkManager
mount --bind "$KNM_RUN" /run/NetworkManager
mount --bind "$KNM_LIB" /var/lib/NetworkManager
`

// sysfsScript mounts a sysfs of this network namespace that is read-only
// at /sys (NetworkManager then does not wait for udev, which does not see
// links of other namespaces) but writable below /sys/devices (where it
// writes bridge and bridge port options and sriov_numvfs), then execs
// NetworkManager ($KNM_NM) with the configuration of WriteConfig in
// $KNM_DIR. Read-only is the /sys mount's flag, not the superblock's: a
// namespace's sysfs mounts share one superblock, and `mount -o ro` of the
// first made every later mount of it read-only too (NetworkManager's
// bridge VLAN and port option writes failed with EROFS). With $KNM_OVS:
// the OVS directory at /run/openvswitch and the OVS build's plugin
// directory over the compile-time one (Debian's plugins are not built for
// that binary).
const sysfsScript = `set -e
umount -l /sys
mount -t sysfs sysfs /sys
mount --bind /sys/devices /sys/devices
mount -o remount,bind,ro /sys
if [ -n "$KNM_OVS" ]; then
  mkdir -p /run/openvswitch
  mount --bind "$KNM_OVS" /run/openvswitch
  mount --bind "$KNM_PLUGINS" "$KNM_PLUGIN_DIR"
fi
exec "$KNM_NM" --no-daemon --debug --config="$KNM_DIR/NetworkManager.conf" --config-dir="$KNM_DIR/conf.d" \
  --system-config-dir="$KNM_DIR/sysconf.d" --state-file="$KNM_DIR/NetworkManager.state"
`

// Command is how NetworkManager starts with the configuration of
// WriteConfig in dir and the bus at bus: the shell with the arguments and
// environment returned, in a mount namespace of its own (the caller
// unshares it: syscall.CLONE_NEWNS), where the shell mounts /sys as
// sysfsScript says and execs
// NetworkManager. A lab node in kubelet mode, whose /run and
// /var/lib are its own already, starts it so; Start adds runScript.
func Command(dir, bus string) (path string, args, env []string) {
	return "/bin/sh", []string{"-c", sysfsScript}, []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"DBUS_SYSTEM_BUS_ADDRESS=" + bus,
		"KNM_DIR=" + dir, "KNM_NM=NetworkManager",
	}
}

func (in *Instance) startNM(ctx context.Context) error {
	logf, err := os.OpenFile(in.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	path, args, env := Command(in.opts.Dir, in.Bus)
	args[1] = runScript + args[1]
	cmd := exec.Command(path, args...)
	cmd.Env = append(env, "KNM_RUN="+in.RunDir, "KNM_LIB="+in.LibDir)
	if b := in.ovsBuild; b != nil {
		cmd.Env = append(cmd.Env, "KNM_NM="+b.NetworkManager, "KNM_OVS="+in.opts.OVS, "KNM_PLUGINS="+b.Plugins, "KNM_PLUGIN_DIR="+b.PluginDir)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// A new mount namespace (Go makes its mounts private before exec).
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := in.spawner.start(cmd); err != nil {
		return fmt.Errorf("nmrun: starting NetworkManager: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	in.mu.Lock()
	in.nm, in.nmDone = cmd, done
	in.mu.Unlock()
	return in.waitReady(ctx, done)
}

// waitReady waits until NetworkManager answers on the bus and its
// Startup property is false (initial device setup done).
func (in *Instance) waitReady(ctx context.Context, done chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		select {
		case <-done:
			return fmt.Errorf("nmrun: NetworkManager exited during start-up; log %s:\n%s", in.Log, tail(in.Log))
		case <-ctx.Done():
			return fmt.Errorf("nmrun: NetworkManager not ready: %w (last: %v); log %s:\n%s", ctx.Err(), last, in.Log, tail(in.Log))
		case <-time.After(50 * time.Millisecond):
		}
		last = in.ready()
		if last == nil {
			return nil
		}
	}
}

func (in *Instance) ready() error {
	conn, err := dbus.Connect(in.Bus)
	if err != nil {
		return err
	}
	defer conn.Close()
	v, err := conn.Object("org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager").GetProperty("org.freedesktop.NetworkManager.Startup")
	if err != nil {
		return err
	}
	if starting, _ := v.Value().(bool); starting {
		return errors.New("still starting")
	}
	return nil
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// StopNM stops NetworkManager (SIGTERM, then SIGKILL after 10 s) and
// leaves the bus running. What it configured stays in the kernel, as
// when the service stops on a real node.
func (in *Instance) StopNM() error {
	in.mu.Lock()
	cmd, done := in.nm, in.nmDone
	in.nm = nil
	in.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// Restart stops NetworkManager and starts it again. With reboot, the run
// directory is emptied first, as a reboot empties the tmpfs /run: the
// in-memory profiles are gone.
func (in *Instance) Restart(ctx context.Context, reboot bool) error {
	if err := in.StopNM(); err != nil {
		return err
	}
	if reboot {
		if err := os.RemoveAll(in.RunDir); err != nil {
			return fmt.Errorf("nmrun: emptying the run directory: %w", err)
		}
		if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
			return fmt.Errorf("nmrun: %w", err)
		}
	}
	return in.startNM(ctx)
}

// Stop ends NetworkManager and the bus (only the processes Start
// started) and releases the namespace thread.
func (in *Instance) Stop() error {
	if in == nil {
		return nil
	}
	err := in.StopNM()
	in.stopSupplicant()
	if in.bus != nil && in.bus.Process != nil {
		_ = in.bus.Process.Kill()
		_ = in.bus.Wait()
		in.bus = nil
	}
	if in.spawner != nil {
		in.spawner.close()
		in.spawner = nil
	}
	return err
}

// spawner is a goroutine locked to an OS thread inside the network
// namespace that starts the instance's processes: children inherit the
// thread's network namespace, and their parent-death signal is tied to
// this thread, which lives exactly as long as the instance (a killed test
// binary takes its NetworkManager with it). The thread is never switched
// back: when the spawner closes, its goroutine exits still locked and the
// runtime discards the thread.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner(nsPath string) (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(s.done)
		ns, err := netns.GetFromPath(nsPath)
		if err != nil {
			ready <- fmt.Errorf("nmrun: opening %s: %w", nsPath, err)
			return
		}
		err = unix.Setns(int(ns), unix.CLONE_NEWNET)
		ns.Close()
		if err != nil {
			ready <- fmt.Errorf("nmrun: entering %s: %w", nsPath, err)
			return
		}
		ready <- nil
		for r := range s.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	if err := <-ready; err != nil {
		<-s.done
		return nil, err
	}
	return s, nil
}

func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnReq{cmd, errc}
	return <-errc
}

func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}

// Nmcli runs nmcli against the private bus at addr and returns its
// combined output.
func Nmcli(ctx context.Context, addr string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nmcli", args...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+addr)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Checkpoints counts NetworkManager's pending checkpoints (the Manager's
// Checkpoints property), read on the bus at addr.
func Checkpoints(addr string) (int, error) {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	v, err := conn.Object("org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager").GetProperty("org.freedesktop.NetworkManager.Checkpoints")
	if err != nil {
		return 0, err
	}
	cps, _ := v.Value().([]dbus.ObjectPath)
	return len(cps), nil
}
