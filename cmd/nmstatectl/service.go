package main

import "github.com/spf13/cobra"

func newServiceCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "service",
		Aliases: []string{},
		Short:   "Apply the state files of a directory at start and keep leases and checkpoints",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("service")
		},
	}
}
