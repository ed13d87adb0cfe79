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
		if satisfied(desired, current) {
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

// firstBootApply is the handler's transaction without the API: select the
// probes that pass now, apply under a checkpoint, and commit only if they
// still pass, else roll back.
func firstBootApply(ctx context.Context, log *slog.Logger, b runtimeNode, o *firstBootOptions, desired *nmstate.State) error {
	po := probe.Options{NetNS: o.node.netns, Show: b.Show, DNSHost: o.dnsHost, TCPAddress: o.tcpAddress,
		PingTimeout: o.probeTimeout, DNSTimeout: o.probeTimeout, TCPTimeout: o.probeTimeout}.WithDefaults()
	all := po.All()
	passed := probe.Passing(ctx, all, po.SelectTimeout, po.Interval)
	selected := probe.Select(all, passed)
	var names []string
	for _, p := range selected {
		names = append(names, p.Name)
	}
	log.Info("probes selected (those passing before the change)", "probes", names)

	res, err := apply.Apply(ctx, b, desired, apply.Options{
		StateDir: o.stateDir, NoCommit: true,
		Timeout: 2 * (po.PingTimeout + po.DNSTimeout),
		NetNS:   o.node.netns, ResolvConf: o.node.resolvConf, UTSNS: o.node.utsNS, OVSDB: o.node.ovsdb,
		OnCheckpoint: b.OnCheckpoint,
	})
	if err != nil {
		return err
	}
	if res.Checkpoint == "" {
		return nil // the file asks for nothing
	}
	log.Info("applied, probing", "checkpoint", res.Checkpoint, "operations", len(res.Plan.Ops))
	if err := probe.Run(ctx, selected, po.Interval); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if _, rbErr := apply.Rollback(rctx, b, o.stateDir); rbErr != nil {
			return fmt.Errorf("%w; rolling back checkpoint %s failed: %w", err, res.Checkpoint, rbErr)
		}
		return fmt.Errorf("%w; rolled back checkpoint %s: the previous state is restored", err, res.Checkpoint)
	}
	// As nmstatectl commit: a backend checkpoint (NetworkManager's) is
	// committed through its backend.
	if _, err := commitPending(ctx, o.stateDir); err != nil {
		return fmt.Errorf("committing checkpoint %s: %w", res.Checkpoint, err)
	}
	return nil
}

// satisfied reports whether the node already shows desired (the fixed
// point: planning it again would change nothing that verification sees).
func satisfied(desired, current *nmstate.State) bool {
	m, err := nmstate.Merge(desired, current)
	if err != nil {
		return false
	}
	return nmstate.Verify(m.Desired, current) == nil
}
