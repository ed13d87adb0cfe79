package nmstatectl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/version"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "nmstatectl %s\n", version.Version)
			return err
		},
	}
}
