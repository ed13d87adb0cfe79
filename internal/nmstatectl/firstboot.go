package nmstatectl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/openshift"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

type firstBootOptions struct {
	node      nodeAddr
	stateDir  string
	sourceDir string
	// hostname overrides the host's own name (--hostname).
	hostname     string
	dnsHost      string
	tcpAddress   string
	probeTimeout time.Duration
	quiet        bool
	verbose      int
}

func newFirstBootCmd(g *globalOptions) *cobra.Command {
	o := &firstBootOptions{}
	cmd := &cobra.Command{
		Use:   "first-boot",
		Short: "Apply this host's file of " + openshift.SourceDir + " once (OpenShift's per-host NMState)",
		Long: "Pick <short hostname>.yml of the source directory, else cluster.yml, and apply it with a " +
			"checkpoint: the gateway, DNS and --probe-tcp probes that pass before the change must pass after it, or the " +
			"node is rolled back. On success the file is copied to " + openshift.AppliedFile + ", which makes " +
			"later boots do nothing while the file is unchanged and the node shows it (a node whose network " +
			"configuration did not survive the reboot gets it again), and tells configure-ovs to leave br-ex alone; " +
			"on failure nothing is recorded and the exit status is non-zero. Logs go to stdout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.node, o.stateDir, o.quiet, o.verbose = g.node(), g.stateDir, g.quiet, g.verbose
			if o.sourceDir == "" {
				return errors.New("--source-dir: empty directory name")
			}
			if o.stateDir == "" {
				return errors.New("--state-dir: required")
			}
			return runFirstBoot(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.sourceDir, "source-dir", openshift.SourceDir, "directory of <host>.yml and cluster.yml files")
	f.StringVar(&o.hostname, "hostname", "", "host name the file is chosen by (default: the node's own, from --uts-ns or this process)")
	f.StringVar(&o.dnsHost, "probe-dns-host", probe.DefaultDNSHost, "name the DNS probe resolves")
	f.StringVar(&o.tcpAddress, "probe-tcp", "", "HOST:PORT the node must still reach after the change (the API server, e.g. api-int.CLUSTER.DOMAIN:6443)")
	f.DurationVar(&o.probeTimeout, "probe-timeout", 0, "how long each probe may take after the change (default: the handler's)")
	return cmd
}

func runFirstBoot(ctx context.Context, stdout io.Writer, o *firstBootOptions) error {
	log := firstBootLogger(stdout, o)
	b, closeNode, err := openNode(ctx, o.node, o.stateDir, stdout)
	if err != nil {
		return fmt.Errorf("first boot: %w", err)
	}
	defer closeNode()

	host, err := firstBootHost(ctx, b, o)
	if err != nil {
		return fmt.Errorf("first boot: %w", err)
	}
	c, err := openshift.Choose(o.sourceDir, host)
	if err != nil {
		return fmt.Errorf("first boot of %s: %w", host, err)
	}
	if c.Path == "" {
		log.Info("no state file for this host, nothing to apply", "host", host, "dir", o.sourceDir)
		return nil
	}
	desired, err := nmstate.Decode(c.Data)
	if err == nil {
		err = nmstate.Validate(desired, nil).Err()
	}
	if err != nil {
		return fmt.Errorf("first boot of %s: %s: nothing changed, no flag written:\n%w", host, c.Path, err)
	}
	if c.Applied {
		// Applied at an earlier boot. Where the network configuration
		// persists (NetworkManager) the node still shows it; on the kernel
		// backend a reboot wiped it, and the file, which the machine
		// configuration owns, is applied again.
		current, err := b.Show(ctx)
		if err != nil {
			return fmt.Errorf("first boot of %s: reading the node: %w", host, err)
		}
		if nmstate.Shows(current, desired) {
			log.Info("state file already applied, nothing to do", "host", host, "file", c.Path, "sha256", c.SHA256)
			return nil
		}
		log.Info("state file applied at an earlier boot but not in place now: applying it again", "host", host, "file", c.Path)
	}
	log.Info("applying state file", "host", host, "file", c.Path, "sha256", c.SHA256)
	start := time.Now()
	if err := firstBootApply(ctx, log, b, o, desired); err != nil {
		return fmt.Errorf("first boot of %s: %s: no flag written: %w", host, c.Path, err)
	}
	if err := openshift.RecordApplied(o.sourceDir, c); err != nil {
		return fmt.Errorf("first boot of %s: applied %s, but %w", host, c.Path, err)
	}
	log.Info("state file applied", "host", host, "file", c.Path, "recordedIn", filepath.Join(o.sourceDir, filepath.Base(openshift.AppliedFile)), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func firstBootLogger(w io.Writer, o *firstBootOptions) *slog.Logger {
	if o.quiet {
		return slog.New(slog.DiscardHandler)
	}
	level := slog.LevelInfo
	if o.verbose > 0 {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// firstBootHost is the name the file is chosen by: --hostname, else the
// node's running host name (its UTS namespace with --uts-ns), else this
// process's.
func firstBootHost(ctx context.Context, b apply.Backend, o *firstBootOptions) (string, error) {
	if o.hostname != "" {
		return openshift.ShortHostname(o.hostname), nil
	}
	if o.node.utsNS != "" {
		s, err := b.Show(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the host name: %w", err)
		}
		if s.Hostname != nil && s.Hostname.Running != nil && *s.Hostname.Running != "" {
			return openshift.ShortHostname(*s.Hostname.Running), nil
		}
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name: %w", err)
	}
	return openshift.ShortHostname(h), nil
}

// firstBootApply is the handler's transaction without the API: the
// probes that pass now must still pass after the change, else it is
// rolled back.
func firstBootApply(ctx context.Context, log *slog.Logger, b runtimeNode, o *firstBootOptions, desired *nmstate.State) error {
	po := probe.Options{NetNS: o.node.netns, Show: b.Show, DNSHost: o.dnsHost, TCPAddress: o.tcpAddress,
		PingTimeout: o.probeTimeout, DNSTimeout: o.probeTimeout, TCPTimeout: o.probeTimeout}.WithDefaults()
	tx, err := apply.Transact(ctx, b, desired, apply.TxOptions{
		Options: apply.Options{
			StateDir: o.stateDir,
			Timeout:  2 * (po.PingTimeout + po.DNSTimeout),
			NetNS:    o.node.netns, ResolvConf: o.node.resolvConf, UTSNS: o.node.utsNS, OVSDB: o.node.ovsdb,
			OnCheckpoint: b.OnCheckpoint,
		},
		Probes: po.All(), ProbeInterval: po.Interval, ProbeSelectTimeout: po.SelectTimeout,
		BeforeProbes: func(_ context.Context, tx *apply.TxResult) {
			log.Info("applied, probing (the probes that passed before the change)", "checkpoint", tx.Apply.Checkpoint,
				"operations", len(tx.Apply.Plan.Ops), "probes", probe.Names(tx.Probes))
		},
	})
	if tx.Pending != "" || tx.PendingErr != nil {
		log.Info("before applying, rolled back a checkpoint nobody committed", "checkpoint", tx.Pending, "error", tx.PendingErr)
	}
	return err
}
