package main

import "github.com/spf13/cobra"

func newPolicyCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "policy POLICY_FILE",
		Aliases: []string{"p"},
		Short:   "Resolve a policy (capture + desiredState) into a desired state",
		RunE: func(cmd *cobra.Command, args []string) error {
			return notImplemented("policy")
		},
	}
}
