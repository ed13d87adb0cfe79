package nmstatectl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/vishvananda/netns"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/noded"
)

// defaultConfigDir is upstream's directory of boot-time state files.
const defaultConfigDir = "/etc/nmstate"

type serviceOptions struct {
	node      nodeAddr
	stateDir  string
	configDir string
	quiet     bool
	verbose   int
}

func newServiceCmd(g *globalOptions) *cobra.Command {
	o := &serviceOptions{}
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Apply the state files of a directory at start and keep leases and checkpoints",
		Long: "Apply every *.yml/*.yaml file of the configuration directory in name order, renaming " +
			"each applied file to *.applied (a file that fails is reported and kept), then keep " +
			"running as the node runtime: DHCP clients and IPv6 autoconf for the interfaces whose " +
			"applied state asks for them, renewing leases and installing addresses, routes and DNS " +
			"as the auto-* settings say, and the watchdog of a pending checkpoint. Stops on SIGINT/SIGTERM, " +
			"leaving leased addresses in place until their lifetime ends.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.node, o.stateDir, o.quiet, o.verbose = g.node(), g.stateDir, g.quiet, g.verbose
			if err := o.validate(); err != nil {
				return err
			}
			return runService(cmd.Context(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.configDir, "config", "c", defaultConfigDir, "directory of state files applied at start")
	f.StringVar(&o.configDir, "config-dir", defaultConfigDir, "same as --config")
	return cmd
}

func (o *serviceOptions) validate() error {
	if o.stateDir == "" {
		return errors.New("--state-dir: required by the service")
	}
	if o.configDir == "" {
		return errors.New("--config: empty directory name")
	}
	return nil
}

// nsFile turns --netns into a path, as the kernel backend does.
func nsFile(name string) string {
	switch {
	case name == "":
		return "/proc/self/ns/net"
	case strings.Contains(name, "/"):
		return name
	default:
		return filepath.Join("/run/netns", name)
	}
}

func serviceLogger(w io.Writer, o *serviceOptions) *slog.Logger {
	if o.quiet {
		return slog.New(slog.DiscardHandler)
	}
	level := slog.LevelInfo
	if o.verbose > 0 {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func runService(ctx context.Context, stderr io.Writer, o *serviceOptions) error {
	log := serviceLogger(stderr, o)
	kb, err := openKernel(ctx, o.node)
	if err != nil {
		return err
	}
	defer kb.Close()
	ns, err := netns.GetFromPath(nsFile(o.node.netns))
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", nsFile(o.node.netns), err)
	}
	defer ns.Close()
	hostname, _ := os.Hostname()
	rt, err := noded.New(noded.Options{
		Namespace: ns, Installer: noded.KernelInstaller{B: kb}, StateDir: o.stateDir,
		Hostname: hostname, Logger: log,
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- rt.Run(ctx) }()
	select {
	case err := <-runErr:
		return err
	case <-rt.Ready():
	}

	booted, err := bootTime()
	if err != nil {
		log.Error("reading the boot time; a checkpoint from before boot waits for its deadline", "error", err)
	}
	guardPendingCheckpoint(ctx, log, o.stateDir, booted)

	conf, err := noded.ReadServiceConfig(o.configDir)
	if err != nil {
		// As upstream: a configuration it cannot read stops the service
		// from applying anything; the runtime (DHCP) keeps running.
		log.Error("state files not applied", "error", err)
		return <-runErr
	}
	keep := conf.Service.KeepStateFileAfterApply
	results, err := noded.ApplyDir(ctx, o.configDir, keep, func(ctx context.Context, path string, desired *nmstate.State) error {
		return serviceApply(ctx, kb, rt, o, desired)
	})
	for _, r := range results {
		if r.Err != nil {
			log.Error("state file not applied", "file", r.File, "error", r.Err)
			continue
		}
		if keep {
			log.Info("state file applied", "file", r.File, "recordedIn", r.Applied)
		} else {
			log.Info("state file applied", "file", r.File, "renamedTo", r.Applied)
		}
	}
	if err != nil && ctx.Err() == nil {
		log.Error("applying state files", "error", err)
	}
	return <-runErr
}

// serviceApply runs the one apply sequence with the runtime following it.
func serviceApply(ctx context.Context, kb *kernel.Backend, rt *noded.Runtime, o *serviceOptions, desired *nmstate.State) error {
	ob := openOVS(ctx, kb, o.node)
	defer ob.Close()
	ab := &noded.ApplyBackend{Inner: ob, StateDir: o.stateDir, Follow: rt.Update}
	_, err := apply.Apply(ctx, ab, desired, apply.Options{
		StateDir: o.stateDir,
		NetNS:    o.node.netns, ResolvConf: o.node.resolvConf, UTSNS: o.node.utsNS, OVSDB: o.node.ovsdb,
		OnCheckpoint: ab.OnCheckpoint,
	})
	return err
}

// guardPendingCheckpoint deals with a checkpoint left pending. One made
// before the machine booted is rolled back at once: the apply that made
// it, its watchdog and whoever would have committed it are gone, as
// NetworkManager's checkpoints are at boot. Otherwise (the service
// restarted while an apply waits for its commit) it is guarded until it is
// committed or its deadline passes, so the apply's user can still commit.
// A zero booted means unknown: the checkpoint is guarded.
func guardPendingCheckpoint(ctx context.Context, log *slog.Logger, stateDir string, booted time.Time) {
	rec, err := apply.ReadCheckpoint(stateDir)
	if errors.Is(err, apply.ErrNoCheckpoint) {
		return
	}
	if err != nil {
		log.Error("reading pending checkpoint", "error", err)
		return
	}
	open := func(ctx context.Context, rec *apply.Checkpoint) (apply.Backend, func(), error) {
		return openNode(ctx, checkpointNode(rec), stateDir, os.Stderr)
	}
	if !booted.IsZero() && rec.Created.Before(booted) {
		b, closeFn, err := open(ctx, rec)
		if err != nil {
			log.Error("rolling back a checkpoint from before boot", "checkpoint", rec.ID, "error", err)
			return
		}
		defer closeFn()
		if _, err := apply.RollbackWithOptions(ctx, b, stateDir, apply.RollbackOptions{}); err != nil {
			log.Error("rolling back a checkpoint from before boot", "checkpoint", rec.ID, "error", err)
			return
		}
		log.Info("checkpoint from before boot rolled back", "checkpoint", rec.ID, "created", rec.Created, "booted", booted)
		return
	}
	go func() {
		rolled, err := apply.Watch(ctx, stateDir, rec.ID, open, apply.RollbackOptions{}, 0)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("checkpoint watchdog", "checkpoint", rec.ID, "error", err)
		case rolled:
			log.Info("checkpoint not committed in time: rolled back", "checkpoint", rec.ID)
		}
	}()
}

// bootTime is when the machine booted (btime of /proc/stat).
func bootTime() (time.Time, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: /proc/stat btime %q: %w", v, err)
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, errors.New("boot time: no btime in /proc/stat")
}

// runtimeFollower connects a one-off apply (nmstatectl apply, rollback) to
// the node runtime: the returned backend wraps kb so that the runtime of
// stateDir follows the apply (a running `nmstatectl service` gets the
// state submitted; without one, leases are acquired once and a warning
// says that nothing renews them), and Show reports dynamic interfaces as
// applied. Pass ab.OnCheckpoint from apply.Options.OnCheckpoint. The
// caller calls closeFn when done.
func runtimeFollower(kb *kernel.Backend, inner apply.Backend, n nodeAddr, stateDir string, warn io.Writer) (ab *noded.ApplyBackend, closeFn func(), err error) {
	ns, err := netns.GetFromPath(nsFile(n.netns))
	if err != nil {
		return nil, nil, fmt.Errorf("opening network namespace %s: %w", nsFile(n.netns), err)
	}
	hostname, _ := os.Hostname()
	opts := noded.Options{Namespace: ns, Installer: noded.KernelInstaller{B: kb}, StateDir: stateDir, Hostname: hostname}
	follow := noded.DetachedFollow(opts, oneShotLeaseTimeout, func(msg string) {
		fmt.Fprintln(warn, "warning:", msg)
	})
	return &noded.ApplyBackend{Inner: inner, StateDir: stateDir, Follow: follow}, func() { ns.Close() }, nil
}

// oneShotLeaseTimeout bounds waiting for leases in a one-off apply.
const oneShotLeaseTimeout = 30 * time.Second

// annotateShow adds what the node runtime's record knows to a state read
// from the kernel (dhcp: true and auto-* as applied, dynamic DNS as
// running only). A missing record changes nothing.
func annotateShow(stateDir string, st *nmstate.State) error {
	rec, err := noded.ReadRecord(stateDir)
	if err != nil {
		return err
	}
	rec.Annotate(st)
	return nil
}
