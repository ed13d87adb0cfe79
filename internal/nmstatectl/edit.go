package nmstatectl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/apply"
)

func newEditCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{}
	var persist bool
	cmd := &cobra.Command{
		Use:     "edit [IFNAME...]",
		Aliases: []string{"e"},
		Short:   "Edit the current state in $EDITOR and apply the result",
		Long: "Open the node's running configuration (of IFNAME only, when given) in $EDITOR " +
			"(default vi), then apply what was saved, with apply's checkpoint, verification and " +
			"rollback. Saving the file unchanged applies nothing. A file that does not decode is " +
			"reported and kept, so the edit is not lost.",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.node, o.stateDir, o.reexec = g.node(), g.stateDir, g.reexec
			o.node.memoryOnly = o.memoryOnly
			return runEdit(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.noVerify, "no-verify", false, "do not verify the result (an execution error still rolls back)")
	f.BoolVar(&o.noCommit, "no-commit", false, "leave the checkpoint pending for commit or rollback")
	f.IntVar(&o.timeout, "timeout", int(apply.DefaultTimeout/time.Second), "seconds until an uncommitted checkpoint rolls back")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&o.memoryOnly, "memory-only", false, "do not make the state persistent: absent interfaces become down; networkmanager backend: profiles in memory, none deleted, gone after a reboot")
	f.BoolVar(&persist, "persist", false, "no-op, kept for scripts: profiles are saved to disk unless --memory-only")
	return cmd
}

func runEdit(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o *applyOptions, ifaces []string) error {
	var cur bytes.Buffer
	if err := runShow(ctx, &cur, &showOptions{node: o.node, stateDir: o.stateDir, ifaces: ifaces, runningConfig: true}); err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	dir, err := os.MkdirTemp("", "nmstatectl-edit-")
	if err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	file := filepath.Join(dir, "state.yml")
	if err := os.WriteFile(file, cur.Bytes(), 0o600); err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	editor := os.Getenv("EDITOR")
	if editor == "" {
		editor = "vi"
	}
	// As git runs core.editor: through the shell, so EDITOR may carry
	// arguments.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", editor+` "$1"`, "editor", file)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if f, ok := stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("edit: running the editor %q: %w", editor, err)
	}
	edited, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(edited), bytes.TrimSpace(cur.Bytes())) {
		_, err := fmt.Fprintln(stderr, "edit: no change")
		return err
	}
	o.files = []string{file}
	if err := o.validate(); err != nil {
		return err
	}
	if err := runApply(ctx, stdin, stdout, stderr, o); err != nil {
		keep = true
		fmt.Fprintf(stderr, "edit: the edited state is kept in %s\n", file)
		return err
	}
	return nil
}
