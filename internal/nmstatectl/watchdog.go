package nmstatectl

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
)

// watchdogVerb is the hidden verb a detached watchdog process runs.
const watchdogVerb = "checkpoint-watchdog"

type watchdogOptions struct {
	stateDir string
	id       string
}

// newWatchdogCmd is the hidden verb `checkpoint-watchdog ID`: wait for
// checkpoint ID's deadline and roll it back unless it was committed or
// rolled back first. apply starts it detached, so a checkpoint rolls back
// on time even after nmstatectl (or the whole session) is gone.
func newWatchdogCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    watchdogVerb + " CHECKPOINT_ID",
		Short:  "Roll back a checkpoint at its deadline (started by apply)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatchdog(cmd.Context(), cmd.ErrOrStderr(), &watchdogOptions{stateDir: g.stateDir, id: args[0]})
		},
	}
}

func runWatchdog(ctx context.Context, log io.Writer, o *watchdogOptions) error {
	pidFile, logFile := watchdogFiles(o.stateDir, o.id)
	defer os.Remove(pidFile)
	open := func(ctx context.Context, rec *apply.Checkpoint) (apply.Backend, func(), error) {
		return openNode(ctx, checkpointNode(rec), o.stateDir, log)
	}
	rolled, err := apply.Watch(ctx, o.stateDir, o.id, open, apply.RollbackOptions{}, 0)
	switch {
	case err != nil:
		return fmt.Errorf("watchdog of checkpoint %s: %w", o.id, err)
	case rolled:
		fmt.Fprintf(log, "checkpoint %s was not committed in time: rolled back\n", o.id)
	default:
		// Committed or rolled back by someone else: nothing worth keeping.
		os.Remove(logFile)
	}
	return nil
}

// watchdogFiles names the pid file and the log of checkpoint id's watchdog.
func watchdogFiles(stateDir, id string) (pidFile, logFile string) {
	return filepath.Join(stateDir, "watchdog-"+id+".pid"), filepath.Join(stateDir, "watchdog-"+id+".log")
}

// startWatchdog starts `nmstatectl checkpoint-watchdog ID` as a detached
// process: its own session (no terminal signals), stdin from /dev/null,
// output to a log in the state directory, not waited for. It runs this
// process's executable with reexec first: os.Executable is knmstate also
// when knmstate was invoked as nmstatectl, which then needs its subcommand.
func startWatchdog(reexec []string, stateDir, id string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("starting the checkpoint watchdog: %w", err)
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return fmt.Errorf("starting the checkpoint watchdog: %w", err)
	}
	pidFile, logFile := watchdogFiles(dir, id)
	logf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("starting the checkpoint watchdog: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, watchdogArgs(reexec, dir, id)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the checkpoint watchdog: %w", err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Process.Release(); err != nil {
		return fmt.Errorf("starting the checkpoint watchdog: %w", err)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		return fmt.Errorf("recording the checkpoint watchdog: %w", err)
	}
	return nil
}

// watchdogArgs is the watchdog's command line after the executable.
func watchdogArgs(reexec []string, stateDir, id string) []string {
	return append(append([]string(nil), reexec...), "--state-dir", stateDir, watchdogVerb, id)
}
