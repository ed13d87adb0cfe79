package main

import "github.com/spf13/cobra"

func newRollbackCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "rollback",
		Aliases: []string{},
		Short:   "Roll back the pending checkpoint",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("rollback")
		},
	}
}
