package nmstatectl

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
)

type commitOptions struct {
	stateDir string
}

func newCommitCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "commit",
		Aliases: []string{},
		Short:   "Commit the pending checkpoint",
		Long:    "Keep the changes of the pending checkpoint (left by apply --no-commit) and print its id.",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommit(cmd.Context(), cmd.OutOrStdout(), &commitOptions{stateDir: g.stateDir})
		},
	}
}

func runCommit(ctx context.Context, stdout io.Writer, o *commitOptions) error {
	id, err := apply.Commit(ctx, o.stateDir)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}
