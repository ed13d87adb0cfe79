package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/ui"
	"github.com/knmstate/knmstate/web"
)

func newUICmd() *cobra.Command {
	opts := ui.Options{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web views (topology, policies, node network states) with your kubeconfig's credentials",
		Long: `Serve knmstate's web views, embedded in this binary, and forward their API
calls to the API server with the credentials of your kubeconfig, so RBAC
decides what you see and change. It listens on loopback by default and prints
a URL with a random token; a request without the token, or with a Host or
Origin other than this server's, is refused with 403 (another web page in
the same browser cannot use your credentials). See docs/ui.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Assets, opts.Built = web.Bundle()
			if err := ui.Run(cmd.Context(), opts, cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("ui: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", ui.DefaultListen, "address to listen on (keep it loopback: the server acts with your credentials)")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	return cmd
}
