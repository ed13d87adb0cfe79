package main

import "github.com/spf13/cobra"

func newFormatCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "format [STATE_FILE]",
		Aliases: []string{"f", "fmt"},
		Short:   "Re-emit a state file in canonical form",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("format")
		},
	}
}
