package handler

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
)

// Run runs the handler of one node until ctx ends: it opens the node's
// namespace, checks that the state can be read (as upstream's start-up
// check of `nmstatectl show`), and reports the NodeNetworkState. It
// returns nil when ctx ends, an error when start-up fails or the kernel
// subscription breaks.
func Run(ctx context.Context, opts Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("handler options: %w", err)
	}
	var err error
	if opts.Lock != nil {
		err = runLocked(ctx, opts)
	} else {
		err = run(ctx, opts)
	}
	if ctx.Err() != nil {
		// Stopped, possibly in the middle of start-up: not a failure.
		return nil
	}
	return err
}

func run(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := opts.Log.WithValues("node", opts.Node)
	// client-go and controller-runtime log through the context's logger.
	ctx = logr.NewContext(ctx, log)

	kopts := kernel.Options{NetNS: opts.NetNS, ResolvConf: opts.ResolvConf, UTSNS: opts.UTSNS}
	if opts.UTSNS != "" && opts.RuntimeStateDir != "" {
		// The node runtime's (nmstatectl service --state-dir), which sets
		// the hostname from DHCP when this one is empty.
		kopts.HostnameFile = filepath.Join(opts.RuntimeStateDir, "hostname")
	}
	if opts.RuntimeStateDir != "" {
		// The node runtime receives LLDP on the interfaces marked there.
		kopts.LLDPDir = filepath.Join(opts.RuntimeStateDir, "lldp")
	}
	b, err := kernel.Open(ctx, kopts)
	if err != nil {
		return fmt.Errorf("handler %s: %w", opts.Node, err)
	}
	defer b.Close()
	ob := openOVS(ctx, b, opts, log)
	defer ob.Close()
	// Subscribe before the first read, so no change slips between them.
	kernelChanges, err := b.Watch(ctx)
	if err != nil {
		return fmt.Errorf("handler %s: %w", opts.Node, err)
	}
	// One subscription for the reporter and drift detection (fanout.go
	// says why).
	fan := newChangeFanout(kernelChanges)
	reporterChanges, err := fan.Subscribe(ctx)
	if err != nil {
		return fmt.Errorf("handler %s: %w", opts.Node, err)
	}
	// OVSDB's configuration changes too (an OVS that starts later, a
	// bridge changed with ovs-vsctl).
	changes := ob.Watch(ctx, reporterChanges)
	defer func() {
		cancel()
		for range changes { // Watch's goroutines are gone once it is closed
		}
		<-fan.Done() // and the kernel subscription's once it is drained
	}()
	if _, err := ob.Show(ctx); err != nil {
		return fmt.Errorf("handler %s: reading network state: %w", opts.Node, err)
	}
	// Without NetworkManager, OVS goes to the node's OVSDB next to the
	// kernel.
	var node shower = ob
	var pb PolicyBackend = ob
	nmVersion := ""
	if useNM(ctx, opts) {
		nb, err := nm.Open(ctx, nm.Options{NetNS: opts.NetNS, UTSNS: opts.UTSNS, HostnameFile: kopts.HostnameFile, ResolvConf: opts.ResolvConf, Bus: opts.DBusAddress, MemoryOnly: opts.MemoryOnlyProfiles,
			OVSDB: opts.OVSDB, OVSDatapath: opts.OVSDatapath})
		if err != nil {
			return fmt.Errorf("handler %s: %w", opts.Node, err)
		}
		defer nb.Close()
		if nmVersion, err = nb.Version(); err != nil {
			return fmt.Errorf("handler %s: %w", opts.Node, err)
		}
		node, pb = nb, nb
	}

	cfg := apiConfig(opts)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("handler scheme: %w", err)
	}
	if err := nmstatev1beta1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("handler scheme: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("handler %s: API client: %w", opts.Node, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient})
	if err != nil {
		return fmt.Errorf("handler %s: API client: %w", opts.Node, err)
	}
	if opts.NetNS == "" {
		if err := checkNodeNetwork(ctx, c, node, opts.Node); err != nil {
			return fmt.Errorf("handler %s: %w", opts.Node, err)
		}
	}
	if opts.Instruments == nil {
		if opts.Instruments, err = metrics.NewHandler(ctrlmetrics.Registry); err != nil {
			return fmt.Errorf("handler %s: %w", opts.Node, err)
		}
	}
	metricsDone, err := serveMetrics(ctx, opts, cfg, httpClient, log)
	if err != nil {
		return fmt.Errorf("handler %s: %w", opts.Node, err)
	}
	defer func() {
		cancel()
		<-metricsDone
	}()
	// The cache only watches this node's NodeNetworkState (deletions and
	// other writers' changes); writes and the Node lookup go direct.
	informers, err := cache.New(cfg, cache.Options{
		Scheme:     scheme,
		HTTPClient: httpClient,
		Mapper:     c.RESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&nmstatev1beta1.NodeNetworkState{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Node)},
		},
	})
	if err != nil {
		return fmt.Errorf("handler %s: API cache: %w", opts.Node, err)
	}

	r := &reporter{
		node:      opts.Node,
		backend:   node,
		changes:   changes,
		nmVersion: nmVersion,
		client:    c,
		filter:    *opts.Filter,
		labels:    opts.Labels,
		version:   opts.Version,
		resync:    opts.Resync,
		deb:       debouncer{quiet: opts.Debounce, maxWait: 5 * opts.Debounce},
		retryMin:  opts.Debounce,
		retryMax:  30 * time.Second,
		log:       log,
		now:       time.Now,
		eventc:    make(chan struct{}, 1),
		metrics:   opts.Instruments,
	}
	if opts.ReadyFile != "" {
		r.alive = func() {
			if err := touch(opts.ReadyFile); err != nil {
				log.Error(err, "touching the ready file")
			}
		}
		defer os.Remove(opts.ReadyFile)
	}
	inf, err := informers.GetInformer(ctx, &nmstatev1beta1.NodeNetworkState{})
	if err != nil {
		return fmt.Errorf("handler %s: watching node network state: %w", opts.Node, err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(asNNS(obj), false) },
		UpdateFunc: func(_, obj any) { r.observe(asNNS(obj), false) },
		DeleteFunc: func(obj any) { r.observe(asNNS(obj), true) },
	}); err != nil {
		return fmt.Errorf("handler %s: watching node network state: %w", opts.Node, err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		cancel()
		if err := <-cacheDone; err != nil {
			return fmt.Errorf("handler %s: API cache: %w", opts.Node, err)
		}
		return fmt.Errorf("handler %s: API cache did not sync", opts.Node)
	}
	log.Info("handler started", "netns", opts.NetNS, "dialNetns", opts.DialNetNS, "networkManager", nmVersion)
	if opts.RuntimeStateDir != "" && nmVersion == "" {
		rb, closeRT, err := runtimeBackend(b, ob, opts, log)
		if err != nil {
			return fmt.Errorf("handler %s: %w", opts.Node, err)
		}
		defer closeRT()
		pb = rb
	}
	settings := opts.Policy
	if !settings.Disabled {
		settings.NoDefaultBridgeVLANs = !bridgeVLANFiltering(log)
	}
	policies := startPolicies(ctx, cancel, opts, settings, pb, fan.Subscribe, cfg, log)
	err = r.run(ctx)
	cancel()
	if perr := <-policies; err == nil && perr != nil {
		err = fmt.Errorf("handler %s: policies: %w", opts.Node, perr)
	}
	if cerr := <-cacheDone; err == nil && cerr != nil {
		err = fmt.Errorf("handler %s: API cache: %w", opts.Node, cerr)
	}
	return err
}

// openOVS puts the node's Open vSwitch database (when it has one) next to
// its kernel: the NodeNetworkState shows OVS bridges and policies can
// configure them; without one, OVS states fail before any change with an
// error that says so.
func openOVS(ctx context.Context, b *kernel.Backend, opts Options, log logr.Logger) *ovs.Backend {
	addr := opts.OVSDB
	if addr == "" {
		addr = ovs.NoAddress
	}
	ob := ovs.Open(ctx, b, ovs.Options{Address: addr, DefaultDatapath: opts.OVSDatapath})
	if opts.OVSDB != "" {
		if err := ob.Connected(); err != nil {
			log.Info("the Open vSwitch database is not reachable (yet): OVS states are refused until it is", "ovsdb", opts.OVSDB, "reason", err.Error())
		} else {
			log.Info("Open vSwitch database connected", "ovsdb", opts.OVSDB)
		}
	}
	return ob
}

// useNM decides the backend: networkmanager, or auto with NetworkManager
// on the bus. For a node namespace other than the process's own, auto asks
// only a given bus: the system bus's NetworkManager manages the machine's
// namespace, not the node's.
func useNM(ctx context.Context, opts Options) bool {
	switch opts.Backend {
	case "networkmanager":
		return true
	case "auto":
		if opts.NetNS != "" && opts.DBusAddress == "" {
			return false
		}
		return nm.Available(ctx, opts.DBusAddress)
	}
	return false
}

// serveMetrics starts the metrics endpoint, when enabled, until ctx ends;
// the channel is closed once it has stopped. An endpoint that cannot
// listen (the port is taken on the node) is logged, not fatal: the node's
// network matters more than its metrics, and the scrape target shows as
// down.
func serveMetrics(ctx context.Context, opts Options, cfg *rest.Config, hc *http.Client, log logr.Logger) (<-chan struct{}, error) {
	done := make(chan struct{})
	if !opts.Metrics.Enabled() {
		close(done)
		return done, nil
	}
	srv, err := metricsserver.NewServer(opts.Metrics.Server(), cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint: %w", err)
	}
	go func() {
		defer close(done)
		if err := srv.Start(ctx); err != nil {
			log.Error(err, "metrics endpoint stopped", "address", opts.Metrics.BindAddress)
		}
	}()
	return done, nil
}

// bridgeVLANFiltering asks the kernel whether linux bridges can filter
// VLANs; when it cannot say, upstream's behaviour (filtering assumed)
// stands.
func bridgeVLANFiltering(log logr.Logger) bool {
	ok, err := kernel.BridgeVLANFiltering()
	switch {
	case err != nil:
		log.Error(err, "linux-bridge ports get the default VLAN trunk all the same")
		return true
	case !ok:
		log.Info("the kernel cannot filter VLANs on bridges (CONFIG_BRIDGE_VLAN_FILTERING): linux-bridge ports get no default VLAN trunk")
	}
	return ok
}

// touch creates path or sets its modification time to now.
func touch(path string) error {
	now := time.Now()
	if err := os.Chtimes(path, now, now); err == nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// apiConfig is opts.Config with the handler's dialer and user agent.
func apiConfig(opts Options) *rest.Config {
	cfg := rest.CopyConfig(opts.Config)
	// client-go's default of 5 requests per second (burst 10) paces a
	// rollout's enactment writes, NNS writes and reads 200 ms apart once
	// the burst is spent; a handler's traffic is small but bursty.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	if opts.DialNetNS != "" {
		cfg.Dial = (&NetNSDialer{Path: opts.DialNetNS}).DialContext
	}
	cfg.UserAgent = "knmstate-handler/" + opts.Version + " (" + opts.Node + ")"
	if opts.Lock != nil {
		// Two handlers of one node tell apart in the API server's logs.
		cfg.UserAgent = "knmstate-handler/" + opts.Version + " (" + opts.Node + "; " + opts.Lock.Identity + ")"
	}
	return cfg
}

// asNNS unwraps a watch event's object (a deletion the watch missed comes
// as a tombstone holding the last known object).
func asNNS(obj any) *nmstatev1beta1.NodeNetworkState {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	nns, _ := obj.(*nmstatev1beta1.NodeNetworkState)
	return nns
}
