package main

import "github.com/spf13/cobra"

func newApplyCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "apply [STATE_FILE|-]",
		Aliases: []string{"a", "set"},
		Short:   "Apply a network state",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("apply")
		},
	}
}
