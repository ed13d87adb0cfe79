package consoleplugin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/knmstate/knmstate/internal/tlsprofile"
)

// DefaultListen is the port the plugin's Service targets.
const DefaultListen = ":9443"

// Options of `knmstate console-plugin`.
type Options struct {
	// Listen is the address to listen on; DefaultListen by default.
	Listen string
	// CertDir holds tls.crt and tls.key (the service CA's Secret,
	// mounted); they are read again when they change.
	CertDir string
	// TLSMinVersion ("VersionTLS12"; "" is TLS 1.2) and TLSCipherSuites
	// follow the cluster's TLS security profile.
	TLSMinVersion   string
	TLSCipherSuites []string
	// Assets and Built are the embedded plugin (package web/plugin's
	// Assets).
	Assets fs.FS
	Built  bool
	// Logger receives the server's logs; default discards.
	Logger *slog.Logger
}

// Validate checks the options before anything starts.
func (o *Options) Validate() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.Listen, err)
	}
	if o.CertDir == "" {
		return errors.New("--cert-dir is required: the console reaches plugins over TLS only")
	}
	if _, err := tlsprofile.Config(o.TLSMinVersion, o.TLSCipherSuites); err != nil {
		return err
	}
	return nil
}

// hashedName matches the scripts webpack names by their content hash
// (plugin-entry.HASH.min.js, NAME-chunk-HASH.min.js).
var hashedName = regexp.MustCompile(`[.-][0-9a-f]{20}\.min\.js$`)

// Handler serves the plugin's files. The manifest is never cached: the
// console reads it at each load, and it names the entry script of the
// version that runs now.
func Handler(assets fs.FS, built bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !built {
			http.Error(w, "this knmstate binary holds no console plugin: build it with make web", http.StatusServiceUnavailable)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "plugin-manifest.json"
		}
		data, err := fs.ReadFile(assets, name)
		if err != nil || name == "PLACEHOLDER" {
			http.NotFound(w, r)
			return
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ctype)
		switch {
		case name == "plugin-manifest.json":
			w.Header().Set("Cache-Control", "no-cache")
		case hashedName.MatchString(name):
			// Named by their content: a new build has new names.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	})
}

// certFiles is the serving certificate of a directory: tls.crt and
// tls.key, read again when either changes (the service CA renews it and
// the kubelet swaps the mounted Secret's files).
type certFiles struct {
	dir string

	mu     sync.Mutex
	cert   *tls.Certificate
	crtMod time.Time
	keyMod time.Time
}

func (c *certFiles) paths() (string, string) {
	return filepath.Join(c.dir, "tls.crt"), filepath.Join(c.dir, "tls.key")
}

// get returns the current certificate, reloading it when the files'
// modification times differ from the loaded ones.
func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	crt, key := c.paths()
	ci, err := os.Stat(crt)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	ki, err := os.Stat(key)
	if err != nil {
		return nil, fmt.Errorf("serving key: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && ci.ModTime().Equal(c.crtMod) && ki.ModTime().Equal(c.keyMod) {
		return c.cert, nil
	}
	pair, err := tls.LoadX509KeyPair(crt, key)
	if err != nil {
		if c.cert != nil {
			// A renewal half written: keep serving the old pair.
			return c.cert, nil
		}
		return nil, fmt.Errorf("loading the serving certificate from %s: %w", c.dir, err)
	}
	c.cert, c.crtMod, c.keyMod = &pair, ci.ModTime(), ki.ModTime()
	return c.cert, nil
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := tlsprofile.Config(o.TLSMinVersion, o.TLSCipherSuites)
	if err != nil {
		return err
	}
	certs := &certFiles{dir: o.CertDir}
	// Fail at start on a missing or broken certificate rather than at the
	// first handshake.
	if _, err := certs.get(nil); err != nil {
		return err
	}
	cfg.GetCertificate = certs.get
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: Handler(o.Assets, o.Built), TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second}
	if !o.Built {
		log.Warn("this binary holds no console plugin: every request gets 503")
	}
	log.Info("serving the console plugin", "address", ln.Addr().String(), "certDir", o.CertDir)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
