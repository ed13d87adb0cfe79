package main

import "github.com/spf13/cobra"

func newCommitCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "commit",
		Aliases: []string{},
		Short:   "Commit the pending checkpoint",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("commit")
		},
	}
}
