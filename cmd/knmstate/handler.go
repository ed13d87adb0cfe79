package main

import "github.com/spf13/cobra"

func newHandlerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "handler --node NAME",
		Short: "Run the per-node handler (NodeNetworkState, enactments)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("handler")
		},
	}
}
