package main

import "github.com/spf13/cobra"

func newWebhookCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "webhook",
		Short: "Run the admission webhook",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("webhook")
		},
	}
}
