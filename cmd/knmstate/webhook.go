package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/webhook"
)

// webhookOptions are the flags of `knmstate webhook`.
type webhookOptions struct {
	kubeconfig string
	verbose    bool
	webhook.Options
}

func newWebhookCmd() *cobra.Command {
	opts := &webhookOptions{}
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Run the admission webhook (policy validation, upstream's mutations)",
		Long: `Run the admission webhook server over HTTPS: it refuses a
NodeNetworkConfigurationPolicy whose desired state the engine cannot read or
validate, whose capture expressions do not parse, or whose templates name an
undefined capture (with the path and reason), and applies upstream's mutating
webhooks. The serving certificate is read from a kubernetes.io/tls Secret
watched through the API, so a rotated certificate is used at once. Serves
/healthz and /readyz on the same port.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(opts.kubeconfig)
			if err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
			cfg.UserAgent = "knmstate-webhook"
			if opts.Client, err = kubernetes.NewForConfig(cfg); err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
			if err := opts.Validate(); err != nil {
				return fmt.Errorf("webhook: %w", err)
			}
			level := slog.LevelInfo
			if opts.verbose {
				level = slog.Level(-1) // logr V(1)
			}
			logger := logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			// client-go and controller-runtime log through these globals;
			// setting them is the command's job, not the library's.
			ctrllog.SetLogger(logger)
			klog.SetLogger(logger)
			opts.Logger = logger
			return webhook.Run(cmd.Context(), opts.Options)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: the in-cluster service account")
	f.BoolVar(&opts.verbose, "verbose", false, "log every refusal and TLS handshake error")
	f.StringVar(&opts.SecretNamespace, "secret-namespace", manifest.DefaultNamespace, "namespace of the serving certificate's Secret")
	f.StringVar(&opts.SecretName, "secret-name", manifest.WebhookServingSecret, "name of the serving certificate's Secret (kubernetes.io/tls)")
	f.StringVar(&opts.BindAddress, "bind-address", "", "address to listen on; empty: all addresses")
	f.IntVar(&opts.Port, "port", webhook.DefaultPort, "port to listen on")
	f.StringVar(&opts.TLSMinVersion, "tls-min-version", "", `lowest TLS version ("VersionTLS12", OpenShift's spelling); empty: TLS 1.2`)
	f.StringSliceVar(&opts.TLSCipherSuites, "tls-cipher-suites", nil, "allowed TLS 1.2 cipher suites, OpenSSL or IANA names (comma-separated); empty: Go's defaults")
	f.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "0", `address of plain-HTTP /healthz and /readyz (also served over HTTPS on --port); "0" disables`)
	return cmd
}
