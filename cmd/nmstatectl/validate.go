package main

import "github.com/spf13/cobra"

func newValidateCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "validate STATE_FILE",
		Aliases: []string{},
		Short:   "Decode and validate a state file",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("validate")
		},
	}
}
