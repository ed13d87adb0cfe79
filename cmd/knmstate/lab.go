package main

import "github.com/spf13/cobra"

func newLabCmd() *cobra.Command {
	lab := &cobra.Command{
		Use:   "lab",
		Short: "A local knmstate cluster: control plane plus nodes as network namespaces",
	}
	for _, c := range []struct{ use, short string }{
		{"up", "Start a lab"},
		{"down", "Stop a lab and remove everything it created"},
		{"status", "List a lab's processes and nodes"},
		{"exec NODE -- CMD...", "Run a command inside a node's namespaces"},
	} {
		lab.AddCommand(&cobra.Command{
			Use:   c.use,
			Short: c.short,
			RunE: func(cmd *cobra.Command, args []string) error {
				return notImplemented("lab " + cmd.Name())
			},
		})
	}
	return lab
}
