package nmstatectl

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

type revertOptions struct {
	node        nodeAddr
	stateDir    string
	file        string // "-" = stdin
	currentFile string // -c/--current; empty: the node's running config
	json        bool
}

// newRevertCmd is upstream's `gr`: the state that undoes applying
// STATE_FILE to the current state.
func newRevertCmd(g *globalOptions) *cobra.Command {
	o := &revertOptions{}
	cmd := &cobra.Command{
		Use:   "gr [STATE_FILE|-]",
		Short: "Generate the state that reverts a desired state",
		Long: "Print the state that undoes applying STATE_FILE (- or none = standard input) to the " +
			"current state: the node's running configuration, or the state in --current.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.node, o.stateDir, o.file = g.node(), g.stateDir, "-"
			if len(args) == 1 {
				o.file = args[0]
			}
			live := func() (*nmstate.State, error) { return liveRunningConfig(cmd.Context(), o.node, o.stateDir) }
			return runRevert(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, live)
		},
	}
	cmd.Flags().StringVarP(&o.currentFile, "current", "c", "", "current state file instead of the node's running configuration")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of YAML")
	return cmd
}

func runRevert(_ context.Context, stdin io.Reader, stdout, stderr io.Writer, o *revertOptions, live func() (*nmstate.State, error)) error {
	desired, err := readState(stdin, stderr, o.file)
	if err != nil {
		return err
	}
	var current *nmstate.State
	if o.currentFile != "" {
		if current, err = readState(stdin, stderr, o.currentFile); err != nil {
			return err
		}
	} else if current, err = live(); err != nil {
		return err
	}
	rev, err := nmstate.Revert(current, desired)
	if err != nil {
		return reportErrors(stderr, err)
	}
	enc := nmstate.EncodeYAML
	if o.json {
		enc = nmstate.EncodeJSON
	}
	out, err := enc(rev)
	if err != nil {
		return fmt.Errorf("printing the revert state: %w", err)
	}
	_, err = stdout.Write(out)
	return err
}

// newAutoconfCmd is upstream's experimental `autoconf`, which configures
// VLANs and bonds from the VLANs LLDP neighbours announce. knmstate
// reports LLDP neighbours (lldp.enabled) but does not turn them into
// VLANs yet, so it says that instead of guessing.
func newAutoconfCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "autoconf [NIC,...]",
		Short: "Configure VLANs from LLDP neighbours (not implemented yet)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("autoconf: not implemented: knmstate reports LLDP neighbours (lldp.enabled, then show) but does not yet configure VLANs or bonds from the VLANs they announce")
		},
	}
	cmd.Flags().BoolP("dry-run", "d", false, "only print the state autoconf would apply")
	return cmd
}
