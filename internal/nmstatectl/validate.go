package nmstatectl

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

type validateOptions struct {
	file    string
	current string // optional current-state file
}

func newValidateCmd(g *globalOptions) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate STATE_FILE",
		Short: "Decode and validate a state file",
		Long: "Decode a YAML or JSON state file strictly and validate it. Exit 0 when valid; " +
			"otherwise print every problem as \"path: reason\" on standard error and exit 1. " +
			"With --current, also check it against that state (e.g. saved `nmstatectl show` output): " +
			"missing interfaces, new interfaces lacking required settings, MTU limits. " +
			"STATE_FILE may be - (standard input).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			return runValidate(cmd.InOrStdin(), cmd.ErrOrStderr(), o)
		},
	}
	cmd.Flags().StringVarP(&o.current, "current", "c", "", "current state file to validate against")
	return cmd
}

func runValidate(stdin io.Reader, stderr io.Writer, o *validateOptions) error {
	desired, err := readState(stdin, stderr, o.file)
	if err != nil {
		return err
	}
	var current *nmstate.State
	if o.current != "" {
		if current, err = readState(stdin, stderr, o.current); err != nil {
			return err
		}
	}
	return reportErrors(stderr, nmstate.Validate(desired, current).Err())
}
