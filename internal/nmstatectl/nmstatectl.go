// Package nmstatectl is the nmstatectl command: upstream nmstatectl's verbs
// and flags over knmstate's engine. It is wiring only (flags, options,
// output); the engine lives in pkg/. One command tree serves the
// nmstatectl binary, `knmstate nmstatectl` and knmstate invoked under the
// name nmstatectl, so the three cannot drift.
package nmstatectl

import (
	"fmt"
	"github.com/knmstate/knmstate/pkg/ovsdb"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/version"
)

// globalOptions are the flags every verb shares. They select the network
// namespace, resolv.conf and state directory so tests and the lab never touch
// this machine's own network.
type globalOptions struct {
	netns      string
	resolvConf string
	stateDir   string
	utsNS      string
	ovsdb      string
	// ovsDatapath is the datapath_type of new OVS bridges that name none.
	ovsDatapath string
	// backend and dbusAddress select the backend (--backend, --dbus-address).
	backend     string
	dbusAddress string
	verbose     int
	quiet       bool
	// reexec are the arguments between this process's executable and
	// nmstatectl's own when it runs itself again (the checkpoint watchdog).
	reexec []string
}

// ExitError carries an exit status other than 1; the command already
// reported what went wrong, so main prints nothing more.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// NewCommand returns nmstatectl's command tree. reexec are the arguments
// that make this process's executable run nmstatectl again: none for the
// nmstatectl binary, "nmstatectl" for knmstate.
func NewCommand(reexec ...string) *cobra.Command {
	g := &globalOptions{reexec: reexec}
	root := &cobra.Command{
		Use:           "nmstatectl",
		Short:         "Declarative node network configuration (nmstate-compatible, netlink engine)",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version, as upstream's clap gives it: the version verb's line.
		Version: version.Version,
	}
	root.SetVersionTemplate("nmstatectl {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&g.netns, "netns", "", "network namespace to act on (name under /run/netns or a path); default: this process's namespace")
	pf.StringVar(&g.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolv.conf file that holds the DNS configuration")
	pf.StringVar(&g.stateDir, "state-dir", "/var/lib/knmstate", "directory for checkpoints and runtime state")
	pf.StringVar(&g.utsNS, "uts-ns", "", "UTS namespace (a path such as /proc/self/ns/uts) whose hostname is shown and set; default: hostname is not managed")
	pf.StringVar(&g.ovsdb, "ovsdb", ovsdb.DefaultAddress, "Open vSwitch database socket (unix:PATH or tcp:HOST:PORT); OVS states fail with a clear error when it is not reachable")
	pf.StringVar(&g.ovsDatapath, "ovs-datapath", "", "datapath_type of new OVS bridges whose state names none (\"netdev\" where the kernel has no openvswitch module); default: OVS's own (system)")
	pf.StringVar(&g.backend, "backend", "auto", "backend: kernel (netlink), networkmanager (NetworkManager over D-Bus), or auto (networkmanager when NetworkManager is on the system bus)")
	pf.StringVar(&g.dbusAddress, "dbus-address", "", "D-Bus address of NetworkManager's system bus; default: the system bus")
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
		newRevertCmd(g),
		newPersistNICNamesCmd(g),
		newAutoconfCmd(),
		newVersionCmd(),
		newWatchdogCmd(g),
		newGCCmd(g),
		newEditCmd(g),
		newFirstBootCmd(g),
	)
	return root
}
