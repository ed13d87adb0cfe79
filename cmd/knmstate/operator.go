package main

import "github.com/spf13/cobra"

func newOperatorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "operator",
		Short: "Run the operator (NMState CR)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("operator")
		},
	}
}
