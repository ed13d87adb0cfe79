package main

import "github.com/spf13/cobra"

func newShowCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "show [IFNAME...]",
		Aliases: []string{"s"},
		Short:   "Show the current network state",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("show")
		},
	}
}
