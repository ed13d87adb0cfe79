package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/internal/consoleplugin"
	"github.com/knmstate/knmstate/web/plugin"
)

func newConsolePluginCmd() *cobra.Command {
	opts := consoleplugin.Options{}
	cmd := &cobra.Command{
		Use:   "console-plugin --cert-dir DIR",
		Short: "Serve the OpenShift console plugin (the web views as a console dynamic plugin) over TLS",
		Long: `Serve knmstate's OpenShift console plugin, embedded in this binary, over TLS
to the console: the plugin's pod on OpenShift (the operator deploys it when
the Console capability is enabled). DIR holds tls.crt and tls.key, the
serving certificate the service CA issues; they are read again when they
change. See docs/openshift.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Assets, opts.Built = plugin.Assets()
			opts.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
			if err := consoleplugin.Run(cmd.Context(), opts); err != nil {
				return fmt.Errorf("console-plugin: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", consoleplugin.DefaultListen, "address to listen on")
	f.StringVar(&opts.CertDir, "cert-dir", "", "directory with tls.crt and tls.key (the service CA's serving certificate)")
	f.StringVar(&opts.TLSMinVersion, "tls-min-version", "", `lowest TLS version ("VersionTLS12", OpenShift's spelling); empty: TLS 1.2`)
	f.StringSliceVar(&opts.TLSCipherSuites, "tls-cipher-suites", nil, "allowed TLS 1.2 cipher suites, OpenSSL or IANA names (comma-separated); empty: Go's defaults")
	return cmd
}
