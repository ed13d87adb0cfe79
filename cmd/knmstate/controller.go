package main

import "github.com/spf13/cobra"

func newControllerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "controller",
		Short: "Run the cluster controller (policy status, rollout permits, GC)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("controller")
		},
	}
}
