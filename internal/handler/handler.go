package handler

import (
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/scrape"
	"github.com/knmstate/knmstate/internal/version"
)

// Defaults of Options.
const (
	// DefaultResync is the safety resync: a full read even without a
	// change signal (hostname changes and sysctls such as forwarding on
	// older kernels have no notification). It writes nothing when the
	// state is unchanged.
	DefaultResync = 10 * time.Minute
	// DefaultDebounce is how long a burst of changes must be quiet before
	// the state is read.
	DefaultDebounce = 200 * time.Millisecond
	// DefaultQPS and DefaultBurst limit the handler's API requests when
	// its configuration does not (a kubeconfig file cannot).
	DefaultQPS   = 20
	DefaultBurst = 50
)

// Options configure one node's handler.
type Options struct {
	// Node is the Node object's name; the NodeNetworkState gets the same
	// name.
	Node string
	// Config reaches the API server. Run copies it and sets its own dialer
	// (DialNetNS) and user agent.
	Config *rest.Config
	// NetNS is the node's network namespace (a name under /run/netns or a
	// path); "" = the process's own.
	NetNS string
	// ResolvConf is the node's resolv.conf file; "" = DNS not reported.
	ResolvConf string
	// UTSNS is the node's UTS namespace (a path); "" = hostname not
	// reported.
	UTSNS string
	// OVSDB is the node's Open vSwitch database socket ("unix:PATH"); ""
	// = the node has no OVS (OVS states are refused, saying so). The
	// handler reconnects while the database is not reachable, so an OVS
	// that starts after the handler is used once it listens.
	OVSDB string
	// OVSDatapath is the datapath_type of OVS bridges whose desired state
	// names none ("" = OVS's default, the kernel datapath; "netdev" where
	// the kernel has no openvswitch module).
	OVSDatapath string
	// Backend is kernel, networkmanager or auto ("" = kernel):
	// networkmanager drives the node through NetworkManager on DBusAddress
	// (profiles, its checkpoints, its DHCP) and reports its version as
	// hostNetworkManagerVersion; auto picks it when NetworkManager is on
	// that bus. The kernel view is read and watched either way.
	Backend string
	// DBusAddress is NetworkManager's bus ("" = the system bus).
	DBusAddress string
	// MemoryOnlyProfiles keeps NetworkManager profiles in memory (the
	// rebootless ephemeral mode, nmstate's --memory-only: absent
	// interfaces become down, no profile deleted, all gone after a
	// reboot). The default saves them to disk, as upstream does.
	MemoryOnlyProfiles bool
	// DialNetNS is the network namespace API connections are dialed from,
	// as a hostNetwork pod reaches the API through its node's network; ""
	// = the process's own namespace, without switching.
	DialNetNS string
	// StateDir will hold the handler's checkpoint records (policy apply,
	// later work); the reporter does not use it.
	StateDir string
	// RuntimeStateDir is the state directory of the node runtime
	// (`nmstatectl service`, pkg/noded) that owns this node's DHCP and
	// autoconf; when set, the runtime follows every policy apply (leases
	// for dhcp: true) and the applied dynamic settings verify as applied.
	// "" = policies with dhcp/autoconf are verified against the kernel only.
	RuntimeStateDir string
	// Resync is the safety resync period (default DefaultResync).
	Resync time.Duration
	// Debounce is the quiet time after a change signal (default
	// DefaultDebounce); a steady stream of changes is reported at least
	// every 5×Debounce.
	Debounce time.Duration
	// Filter selects what the reported state leaves out; nil
	// means FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}.
	Filter *FilterOptions
	// Labels are put on the NodeNetworkState when it is created (upstream:
	// the app.kubernetes.io relationship labels).
	Labels map[string]string
	// Version is reported as handlerNmstateVersion (default
	// internal/version.Version).
	Version string
	// Log receives the handler's logs (the zero Logger discards them).
	Log logr.Logger
	// ReadyFile, when set, is created once the first NodeNetworkState is
	// reported, touched every 30 s while the handler runs and removed when
	// it stops: a pod's readiness and liveness probes look at it
	// (`knmstate health`).
	ReadyFile string
	// Policy tunes the policy side (policy_run.go); it runs when StateDir
	// is set and Policy.Disabled is false.
	Policy PolicySettings
	// Lock, when set, makes the handler hold its node's Lease while it
	// runs (lock.go): one handler per node.
	Lock *LockOptions
	// Metrics is the handler's metrics endpoint; disabled by default (a
	// hostNetwork pod listens on the node's addresses). docs/metrics.md.
	Metrics scrape.Options
	// Instruments record the handler's metrics; nil: Run registers them
	// with controller-runtime's metrics.Registry (what the endpoint
	// serves), shared by every handler of the process.
	Instruments *metrics.Handler
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	var errs []error
	if o.Node == "" {
		errs = append(errs, errors.New("node: required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.Node); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node: %q is not a valid node name: %s", o.Node, msgs[0]))
	}
	if o.Config == nil {
		errs = append(errs, errors.New("config: required (API server access)"))
	}
	if o.Resync < 0 {
		errs = append(errs, fmt.Errorf("resync: %v is negative", o.Resync))
	}
	if o.Debounce < 0 {
		errs = append(errs, fmt.Errorf("debounce: %v is negative", o.Debounce))
	}
	if o.Filter != nil {
		for i, p := range o.Filter.UnmanagedVeth {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("filter.unmanagedVeth[%d]: %q: %w", i, p, err))
			}
		}
	}
	for k, v := range o.Labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels[%s]: %s", k, msgs[0]))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels[%s]: %q: %s", k, v, msgs[0]))
		}
	}
	if o.Lock != nil {
		if err := o.Lock.validate(); err != nil {
			errs = append(errs, err)
		}
		if msgs := validation.IsDNS1123Subdomain(LeaseName(o.Node)); o.Node != "" && len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("lock: lease name %q: %s", LeaseName(o.Node), msgs[0]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Filter == nil {
		o.Filter = &FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}
	}
	if o.Version == "" {
		o.Version = version.Version
	}
	switch o.Backend {
	case "", "kernel", "networkmanager", "auto":
	default:
		return fmt.Errorf("backend: %q is not one of auto, kernel, networkmanager", o.Backend)
	}
	return nil
}
