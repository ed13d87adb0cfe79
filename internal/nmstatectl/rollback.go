package nmstatectl

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
)

type rollbackOptions struct {
	stateDir string
	// checkpoint, when given, must name the pending checkpoint.
	checkpoint string
}

func newRollbackCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "rollback [CHECKPOINT]",
		Aliases: []string{},
		Short:   "Roll back the pending checkpoint",
		Long: "Restore the state from before the pending checkpoint (left by apply --no-commit) and " +
			"print its id. The node is the one recorded in the checkpoint. CHECKPOINT, when given, " +
			"must name the pending checkpoint.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &rollbackOptions{stateDir: g.stateDir}
			if len(args) == 1 {
				o.checkpoint = args[0]
			}
			return runRollback(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
}

func runRollback(ctx context.Context, stdout io.Writer, o *rollbackOptions) error {
	if err := checkpointNamed(o.stateDir, o.checkpoint); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	rec, err := apply.ReadCheckpoint(o.stateDir)
	if err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	b, closeB, err := openNode(ctx, checkpointNode(rec), o.stateDir, os.Stderr)
	if err != nil {
		return fmt.Errorf("rollback %s: %w", rec.ID, err)
	}
	defer closeB()
	id, err := apply.Rollback(ctx, b, o.stateDir)
	if err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}
