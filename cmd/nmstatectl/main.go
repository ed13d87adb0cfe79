// Command nmstatectl is knmstate's node-local network state tool. Its verbs and
// flags follow upstream nmstatectl so scripts and muscle memory carry over.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// globalOptions are the flags every verb shares. They select the network
// namespace, resolv.conf and state directory so tests and the lab never touch
// this machine's own network.
type globalOptions struct {
	netns      string
	resolvConf string
	stateDir   string
	utsNS      string
	verbose    int
	quiet      bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// exitError carries an exit status other than 1 and suppresses the generic
// error print (the command already reported).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "nmstatectl",
		Short:         "Declarative node network configuration (nmstate-compatible, netlink engine)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.netns, "netns", "", "network namespace to act on (name under /run/netns or a path); default: this process's namespace")
	pf.StringVar(&g.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolv.conf file that holds the DNS configuration")
	pf.StringVar(&g.stateDir, "state-dir", "/var/lib/knmstate", "directory for checkpoints and runtime state")
	pf.StringVar(&g.utsNS, "uts-ns", "", "UTS namespace (a path such as /proc/self/ns/uts) whose hostname is shown and set; default: hostname is not managed")
	pf.CountVarP(&g.verbose, "verbose", "v", "more log output (repeatable)")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "no log output")

	root.AddCommand(
		newShowCmd(g),
		newApplyCmd(g),
		newCommitCmd(g),
		newRollbackCmd(g),
		newFormatCmd(g),
		newValidateCmd(g),
		newPolicyCmd(g),
		newStatisticCmd(g),
		newServiceCmd(g),
		newVersionCmd(),
		newWatchdogCmd(g),
	)
	return root
}

// notImplemented is the body of verbs a later change fills in.
func notImplemented(name string) error {
	return fmt.Errorf("%s: not implemented yet", name)
}
