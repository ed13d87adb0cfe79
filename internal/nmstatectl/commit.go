package nmstatectl

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
)

type commitOptions struct {
	stateDir string
	// checkpoint, when given, must name the pending checkpoint.
	checkpoint string
}

func newCommitCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "commit [CHECKPOINT]",
		Aliases: []string{},
		Short:   "Commit the pending checkpoint",
		Long: "Keep the changes of the pending checkpoint (left by apply --no-commit) and print its id. " +
			"A node has at most one pending checkpoint; CHECKPOINT, when given, must name it.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &commitOptions{stateDir: g.stateDir}
			if len(args) == 1 {
				o.checkpoint = args[0]
			}
			return runCommit(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
}

func runCommit(ctx context.Context, stdout io.Writer, o *commitOptions) error {
	if err := checkpointNamed(o.stateDir, o.checkpoint); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	id, err := commitPending(ctx, o.stateDir)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	_, err = fmt.Fprintln(stdout, id)
	return err
}

// checkpointNamed checks that name (when given) names the pending
// checkpoint: its id, or a path ending in it (upstream's checkpoints are
// D-Bus object paths, and scripts pass what apply reported).
func checkpointNamed(stateDir, name string) error {
	if name == "" {
		return nil
	}
	rec, err := apply.ReadCheckpoint(stateDir)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", name, err)
	}
	if name != rec.ID && path.Base(name) != rec.ID {
		return fmt.Errorf("checkpoint %s not found: the pending checkpoint is %s", name, rec.ID)
	}
	return nil
}

// commitPending commits the pending checkpoint; one that holds a backend
// checkpoint (NetworkManager's) is committed through that backend, so it
// does not roll back at its deadline.
func commitPending(ctx context.Context, stateDir string) (string, error) {
	rec, err := apply.ReadCheckpoint(stateDir)
	if err != nil || rec.BackendCheckpoint == "" {
		return apply.Commit(ctx, stateDir)
	}
	b, closeB, err := openShow(ctx, checkpointNode(rec))
	if err != nil {
		return "", err
	}
	defer closeB()
	return apply.CommitBackend(ctx, b, stateDir)
}
