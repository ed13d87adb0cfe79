package main

import "github.com/spf13/cobra"

func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "Measure knmstate against its baselines",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("bench")
		},
	}
}
