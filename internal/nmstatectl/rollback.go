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
}

func newRollbackCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "rollback",
		Aliases: []string{},
		Short:   "Roll back the pending checkpoint",
		Long: "Restore the state from before the pending checkpoint (left by apply --no-commit) and " +
			"print its id. The node is the one recorded in the checkpoint.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRollback(cmd.Context(), cmd.OutOrStdout(), &rollbackOptions{stateDir: g.stateDir})
		},
	}
}

func runRollback(ctx context.Context, stdout io.Writer, o *rollbackOptions) error {
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
