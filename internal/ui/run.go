package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options of `knmstate ui`.
type Options struct {
	// Listen is the address to listen on; DefaultListen by default.
	Listen string
	// Kubeconfig is the user's kubeconfig; empty means the usual rules
	// ($KUBECONFIG, ~/.kube/config, in-cluster).
	Kubeconfig string
	// Token is the URL's secret; empty makes a random one.
	Token string
	// Assets and Built are the embedded views (package web's Bundle).
	Assets fs.FS
	Built  bool
}

// DefaultListen is loopback: only this machine's browser reaches it.
const DefaultListen = "127.0.0.1:8080"

// Validate checks the options before anything starts.
func (o *Options) Validate() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.Listen, err)
	}
	return nil
}

// LoadConfig reads the user's client configuration.
func LoadConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// Run serves until ctx ends. It prints the URL (with its token) to out
// once it listens.
func Run(ctx context.Context, o Options, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cfg, err := LoadConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	if o.Token == "" {
		if o.Token, err = NewToken(); err != nil {
			return err
		}
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	addr := ln.Addr().String()
	s, err := New(Config{Rest: cfg, Assets: o.Assets, Built: o.Built, Token: o.Token, Addr: addr})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if !o.Built {
		fmt.Fprintln(out, "knmstate ui: this binary holds no web views (build them with make build); serving the API proxy only")
	}
	fmt.Fprintf(out, "knmstate ui: open %s\n", URL(addr, o.Token))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Watches never end by themselves: close them after the grace time.
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutting down: %w", err)
	}
	srv.Close()
	return nil
}

// URL is the address to open: loopback by name when the server listens on
// every address.
func URL(addr, token string) string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("http://%s/?token=%s", net.JoinHostPort(host, port), token)
}
