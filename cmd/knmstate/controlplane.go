//go:build !notestbed

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// controlplaneRunOptions are the flags and arguments of `controlplane run`.
type controlplaneRunOptions struct {
	dir     string   // parent of the control plane's temp dir
	command []string // what to run against it
}

func newControlplaneCmd() *cobra.Command {
	cp := &cobra.Command{
		Use:    "controlplane",
		Short:  "Development helpers around a throw-away control plane (etcd + kube-apiserver)",
		Hidden: true,
	}
	var opts controlplaneRunOptions
	run := &cobra.Command{
		Use:   "run [--dir DIR] -- CMD [ARG...]",
		Short: "Start a control plane with the nmstate.io API installed, run CMD with KUBECONFIG set, stop it",
		Long: `Start etcd and kube-apiserver on free loopback ports, install the nmstate.io
CRDs and admission policy, write an admin kubeconfig, run CMD with KUBECONFIG
pointing at it, then stop everything and remove the control plane's directory.
The exit status is CMD's.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.command = args
			code, err := runControlplane(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if code != 0 {
				// The control plane is already stopped; pass CMD's status on.
				os.Exit(code)
			}
			return nil
		},
	}
	run.Flags().StringVar(&opts.dir, "dir", "", "directory to create the control plane's data directory in (default: the system temp dir)")
	cp.AddCommand(run)
	return cp
}

// runControlplane returns the exit code of the command it ran.
func runControlplane(ctx context.Context, opts controlplaneRunOptions) (code int, err error) {
	if opts.dir != "" {
		if err := os.MkdirAll(opts.dir, 0o755); err != nil {
			return 0, fmt.Errorf("controlplane: %w", err)
		}
	}
	env, err := testenv.Start(ctx, testenv.Options{RootDir: opts.dir})
	if err != nil {
		return 0, fmt.Errorf("controlplane: %w", err)
	}
	defer func() {
		if serr := env.Stop(); serr != nil && err == nil {
			err = fmt.Errorf("controlplane: stop: %w", serr)
		}
	}()
	fmt.Fprintf(os.Stderr, "controlplane: ready in %v\n", env.StartupDuration.Round(1e6))

	kubeconfig := filepath.Join(env.Dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return 0, fmt.Errorf("controlplane: %w", err)
	}
	// Not CommandContext: on Ctrl-C the command gets the terminal's signal
	// itself and we wait for it before stopping the control plane.
	cmd := exec.Command(opts.command[0], opts.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if code := exitErr.ExitCode(); code > 0 {
			return code, nil
		}
		return 1, nil // killed by a signal
	case err != nil:
		return 0, fmt.Errorf("controlplane: run %s: %w", opts.command[0], err)
	}
	return 0, nil
}
