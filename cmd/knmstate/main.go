// Command knmstate is the cluster side of knmstate: the per-node handler, the
// cluster controller, the operator, the admission webhook, the local lab and
// the benchmark driver, one subcommand each.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "knmstate",
		Short:         "Declarative node networking for Kubernetes (nmstate.io API)",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newHandlerCmd(),
		newControllerCmd(),
		newOperatorCmd(),
		newWebhookCmd(),
		newLabCmd(),
		newBenchCmd(),
		newControlplaneCmd(),
	)
	return root
}

// notImplemented is the body of subcommands a later change fills in.
func notImplemented(name string) error {
	return fmt.Errorf("%s: not implemented yet", name)
}
