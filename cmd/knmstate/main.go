// Command knmstate is the cluster side of knmstate: the per-node handler, the
// cluster controller, the operator, the admission webhook, the local lab and
// the benchmark driver, one subcommand each. It also carries nmstatectl
// (`knmstate nmstatectl ...`, or knmstate invoked under the name nmstatectl,
// busybox-style), so one binary is enough for a node: the lab's node runtime
// and the container image's /usr/bin/nmstatectl symlink use it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/nmstatectl"
	"github.com/knmstate/knmstate/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(filepath.Base(os.Args[0])).ExecuteContext(ctx)
	stop()
	if err != nil {
		var ee *nmstatectl.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.Code)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// nmstatectlName is the name under which knmstate is nmstatectl, and its
// subcommand that runs nmstatectl.
const nmstatectlName = "nmstatectl"

// newRootCmd is knmstate's command tree, or nmstatectl's when the program
// was invoked as nmstatectl (name is argv[0]'s base name).
func newRootCmd(name string) *cobra.Command {
	// Either way nmstatectl runs itself again (its checkpoint watchdog) as
	// `knmstate nmstatectl ...`: os.Executable names knmstate, not the link.
	if name == nmstatectlName {
		return nmstatectl.NewCommand(nmstatectlName)
	}
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
		nmstatectl.NewCommand(nmstatectlName),
		newHealthCmd(),
		newUICmd(),
		newOpenShiftCmd(),
		newConsolePluginCmd(),
	)
	root.AddCommand(testbedCmds()...)
	return root
}

// notImplemented is the body of subcommands a later change fills in.
func notImplemented(name string) error {
	return fmt.Errorf("%s: not implemented yet", name)
}
