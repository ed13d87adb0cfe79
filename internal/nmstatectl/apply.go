package nmstatectl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

type applyOptions struct {
	node     nodeAddr
	stateDir string
	file     string // "-" = stdin
	// timeout is the checkpoint timeout in seconds (--timeout).
	timeout    int
	noVerify   bool
	noCommit   bool
	dryRun     bool
	memoryOnly bool
	// reexec: see globalOptions.
	reexec []string
}

func newApplyCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:     "apply [STATE_FILE|-]",
		Aliases: []string{"a", "set"},
		Short:   "Apply a network state",
		Long: "Apply a desired state (YAML or JSON; - or no argument = standard input) to the node: " +
			"validate, plan, write a checkpoint, execute, verify, then commit; on any failure the " +
			"previous state is restored. With --no-commit the checkpoint stays pending: `nmstatectl " +
			"commit` keeps the change, `nmstatectl rollback` undoes it, and after --timeout seconds " +
			"a watchdog process undoes it by itself. Prints the applied state, or with --dry-run the plan.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.CalledAs() == "set" {
				fmt.Fprintln(cmd.ErrOrStderr(), "set is deprecated, use apply")
			}
			o.node, o.stateDir, o.file, o.reexec = g.node(), g.stateDir, "-", g.reexec
			if len(args) == 1 {
				o.file = args[0]
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runApply(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.noVerify, "no-verify", false, "do not verify the result (an execution error still rolls back)")
	f.BoolVar(&o.noCommit, "no-commit", false, "leave the checkpoint pending for commit or rollback")
	f.IntVar(&o.timeout, "timeout", int(apply.DefaultTimeout/time.Second), "seconds until an uncommitted checkpoint rolls back")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&o.memoryOnly, "memory-only", false, "do not remove anything persistent: absent interfaces become down")
	return cmd
}

func (o *applyOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout: %d is not a positive number of seconds", o.timeout)
	}
	if !o.dryRun && o.stateDir == "" {
		return errors.New("--state-dir: required to apply")
	}
	return nil
}

func runApply(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o *applyOptions) error {
	desired, err := readState(stdin, stderr, o.file)
	if err != nil {
		return err
	}
	b, closeB, err := openNode(ctx, o.node, o.stateDir, stderr)
	if err != nil {
		return err
	}
	defer closeB()
	opts := apply.Options{
		NoVerify: o.noVerify, NoCommit: o.noCommit, DryRun: o.dryRun, MemoryOnly: o.memoryOnly,
		Timeout:  time.Duration(o.timeout) * time.Second,
		StateDir: o.stateDir,
		NetNS:    o.node.netns, ResolvConf: o.node.resolvConf, UTSNS: o.node.utsNS,
		OnCheckpoint: func(ctx context.Context, rec *apply.Checkpoint) error {
			if err := b.OnCheckpoint(ctx, rec); err != nil {
				return err
			}
			return startWatchdog(o.reexec, o.stateDir, rec.ID)
		},
	}
	res, err := apply.Apply(ctx, b, desired, opts)
	var failure *apply.Failure
	if errors.As(err, &failure) {
		// Printed whole: what failed, then how the rollback went.
		return err
	}
	if err != nil {
		return reportErrors(stderr, err)
	}
	if o.dryRun {
		_, err = io.WriteString(stdout, res.Plan.String())
		return err
	}
	out, err := nmstate.EncodeYAML(res.Desired)
	if err != nil {
		return fmt.Errorf("printing the applied state: %w", err)
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if res.Checkpoint != "" && !res.Committed {
		fmt.Fprintf(stderr, "checkpoint %s is pending: commit it before %s or it rolls back\n",
			res.Checkpoint, res.Deadline.UTC().Format(time.RFC3339))
	}
	return nil
}
