package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/internal/handler"
	"github.com/knmstate/knmstate/internal/scrape"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// handlerOptions are the flags of `knmstate handler`.
type handlerOptions struct {
	node            string
	kubeconfig      string
	netns           string
	resolvConf      string
	utsNS           string
	ovsdb           string
	ovsDatapath     string
	runtimeStateDir string
	stateDir        string
	dialNetNS       string
	resync          time.Duration
	debounce        time.Duration
	unmanagedVeth   []string
	labels          map[string]string
	readyFile       string
	verbosity       int
	policy          handler.PolicySettings
	lockNamespace   string
	lockIdentity    string
	lockLease       time.Duration
	metrics         scrape.Options
	backend         string
	dbusAddress     string
	memoryOnly      bool
	persist         bool
}

func newHandlerCmd() *cobra.Command { return newHandlerCmdFor(&handlerOptions{}) }

// newHandlerCmdFor binds the flags to o.
func newHandlerCmdFor(o *handlerOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "handler --node NAME",
		Short: "Run the per-node handler (NodeNetworkState, enactments)",
		Long: `Run the handler of one node: report the node's network state as its
NodeNetworkState (event-driven; written only when the state changes) and
apply the policies that match the node: one at a time, in name order, each
under a rollout permit from the controller, with a checkpoint, probes and
rollback, reported in its NodeNetworkConfigurationEnactment.

API connections are dialed from inside the node's network namespace
(--dial-netns, default --netns), as a hostNetwork pod reaches the API
server through its node's network. Use --dial-netns=/proc/self/ns/net to
dial from the handler process's own namespace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := o.handlerOptions(cmd.Flags().Changed("dial-netns"))
			if err != nil {
				return err
			}
			return handler.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.node, "node", "", "name of this node (Node object and NodeNetworkState)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
	f.StringVar(&o.netns, "netns", "", "the node's network namespace: a name under /run/netns or a path (default: this process's)")
	f.StringVar(&o.resolvConf, "resolv-conf", "", "the node's resolv.conf file (default: DNS not reported)")
	f.StringVar(&o.ovsdb, "ovsdb", ovsdb.DefaultAddress, "the node's Open vSwitch database socket (unix:PATH); OVS states fail with a clear error while it is not reachable, and the handler connects once it is; \"\" = the node has no OVS")
	f.StringVar(&o.ovsDatapath, "ovs-datapath", "", "datapath_type of OVS bridges whose state names none (default: OVS's, the kernel datapath; netdev = userspace)")
	f.StringVar(&o.utsNS, "uts-ns", "", "the node's UTS namespace, e.g. /proc/PID/ns/uts (default: hostname not reported)")
	f.StringVar(&o.stateDir, "state-dir", "/var/lib/knmstate", "directory for the handler's checkpoint records (used by policy apply); nmstatectl's default, so a checkpoint left by a manual `nmstatectl apply --no-commit` is seen (and rolled back) by the next policy apply")
	f.StringVar(&o.runtimeStateDir, "runtime-state-dir", "", "state directory of the node runtime (nmstatectl service) that owns DHCP/autoconf; it then follows policy applies")
	f.StringVar(&o.dialNetNS, "dial-netns", "", "network namespace API connections are dialed from (default: --netns)")
	f.DurationVar(&o.resync, "resync", handler.DefaultResync, "safety resync period of the NodeNetworkState (writes nothing when unchanged)")
	f.DurationVar(&o.debounce, "debounce", handler.DefaultDebounce, "quiet time after a network change before the state is read")
	f.StringSliceVar(&o.unmanagedVeth, "unmanaged-veth", handler.DefaultUnmanagedVeth(), "name patterns of pod veths left out of the NodeNetworkState (when their peer is in another namespace)")
	f.StringToStringVar(&o.labels, "nns-label", nil, "label put on the NodeNetworkState when it is created (key=value, repeatable)")
	f.StringVar(&o.readyFile, "ready-file", "", "file created once the first NodeNetworkState is reported and touched every 30s (for `knmstate health` probes)")
	f.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity (1: every refresh decision)")
	f.StringVar(&o.lockNamespace, "node-lock-namespace", "", "hold the node's lock, a Lease named after the node in this namespace, while running: a second handler for the node waits, not Ready (default: no lock)")
	f.StringVar(&o.lockIdentity, "node-lock-identity", "", "this handler's name in the node lock (default: host name and process id)")
	f.DurationVar(&o.lockLease, "node-lock-lease", handler.DefaultLockLeaseDuration, "node lock lease duration: a handler that stops without releasing the lock is replaced within it")
	f.StringVar(&o.backend, "backend", "auto", "backend: kernel (netlink), networkmanager (NetworkManager over D-Bus), or auto (networkmanager when NetworkManager is on the bus; for another --netns only with --dbus-address)")
	f.StringVar(&o.dbusAddress, "dbus-address", "", "D-Bus address of NetworkManager's system bus (default: the system bus)")
	f.BoolVar(&o.memoryOnly, "memory-only-profiles", false, "networkmanager backend: keep profiles in memory (absent interfaces go down, no profile deleted; all gone after a reboot, before the handler can reach the API again)")
	f.BoolVar(&o.persist, "persist-profiles", false, "no-op, kept for manifests: profiles are saved to disk unless --memory-only-profiles")
	handler.BindPolicyFlags(f, &o.policy)
	scrape.BindFlags(f, &o.metrics, true)
	return cmd
}

// handlerOptions turns the flags into handler.Options.
func (o *handlerOptions) handlerOptions(dialNetNSSet bool) (handler.Options, error) {
	if o.node == "" {
		return handler.Options{}, errors.New("--node is required")
	}
	cfg, err := loadConfig(o.kubeconfig)
	if err != nil {
		return handler.Options{}, err
	}
	dial := o.dialNetNS
	if !dialNetNSSet {
		dial = o.netns
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-o.verbosity)}))
	// controller-runtime's own packages log through this global logger;
	// setting it here, in the command, keeps the library code free of it.
	ctrllog.SetLogger(log)
	opts := handler.Options{
		Node:               o.node,
		Config:             cfg,
		NetNS:              o.netns,
		ResolvConf:         o.resolvConf,
		UTSNS:              o.utsNS,
		OVSDB:              o.ovsdb,
		OVSDatapath:        o.ovsDatapath,
		DialNetNS:          dial,
		StateDir:           o.stateDir,
		RuntimeStateDir:    o.runtimeStateDir,
		Backend:            o.backend,
		DBusAddress:        o.dbusAddress,
		MemoryOnlyProfiles: o.memoryOnly,
		Resync:             o.resync,
		Debounce:           o.debounce,
		Filter:             &handler.FilterOptions{UnmanagedVeth: o.unmanagedVeth},
		Labels:             o.labels,
		ReadyFile:          o.readyFile,
		Log:                log,
		Policy:             o.policy,
		Metrics:            o.metrics,
	}
	if o.lockNamespace != "" {
		id := o.lockIdentity
		if id == "" {
			host, _ := os.Hostname()
			id = fmt.Sprintf("%s-%d", host, os.Getpid())
		}
		// Renewed well within the lease, retried a few times per lease.
		opts.Lock = &handler.LockOptions{Namespace: o.lockNamespace, Identity: id,
			LeaseDuration: o.lockLease, RenewDeadline: o.lockLease * 2 / 3, RetryPeriod: o.lockLease / 7}
	}
	if err := opts.Validate(); err != nil {
		return handler.Options{}, err
	}
	return opts, nil
}

// loadConfig reads a kubeconfig file, or the in-cluster configuration.
func loadConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster API configuration (or give --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
