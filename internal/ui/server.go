package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

// Server is the guarded handler of one `knmstate ui`.
type Server struct {
	token  string
	cookie string
	// hosts are the Host header values the server answers to.
	hosts  map[string]bool
	proxy  http.Handler
	assets http.Handler
	built  bool
}

// Config says what a Server serves and to whom.
type Config struct {
	// Rest is the user's client configuration: its credentials go with
	// every forwarded request.
	Rest *rest.Config
	// Assets are the built views (index.html at the root); Built false
	// means the binary was built without them.
	Assets fs.FS
	Built  bool
	// Token is the secret of the URL; NewToken makes one.
	Token string
	// Addr is the address the server listens on (host:port, the port
	// resolved), which the Host header must name.
	Addr string
}

// NewToken returns a random token of 128 bits, hex-encoded.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// New builds the handler.
func New(c Config) (*Server, error) {
	if len(c.Token) < 16 {
		return nil, fmt.Errorf("token: too short (%d characters, want at least 16)", len(c.Token))
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", c.Addr, err)
	}
	proxy, err := newProxy(c.Rest)
	if err != nil {
		return nil, err
	}
	s := &Server{
		token: c.Token,
		// One cookie name per port: two servers on one host do not
		// overwrite each other's (cookies ignore the port).
		cookie: "knmstate-ui-" + port,
		hosts:  allowedHosts(host, port),
		proxy:  proxy,
		built:  c.Built,
	}
	if c.Assets != nil {
		s.assets = http.FileServerFS(c.Assets)
	}
	return s, nil
}

// allowedHosts are the names a browser on this machine uses for the
// listen address. A request naming any other host reached us through a
// name that resolves here (DNS rebinding) and is refused.
func allowedHosts(host, port string) map[string]bool {
	names := []string{host}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		names = append(names, "127.0.0.1", "localhost", "::1")
	}
	out := map[string]bool{}
	for _, n := range names {
		out[net.JoinHostPort(n, port)] = true
	}
	return out
}

// newProxy forwards to the API server through the user's transport (TLS
// and credentials of the kubeconfig), streaming watches as they come.
func newProxy(cfg *rest.Config) (http.Handler, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("API server URL %q: %w", cfg.Host, err)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API server transport: %w", err)
	}
	base := strings.TrimSuffix(target.Path, "/")
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = target.Scheme
			r.Out.URL.Host = target.Host
			r.Out.URL.Path = base + r.In.URL.Path
			r.Out.URL.RawPath = ""
			r.Out.Host = target.Host
			// Our guard's token and the browser's own headers stay
			// here: the API server sees the user's credentials only.
			for _, h := range []string{"Cookie", "Authorization", "Origin", "Referer", "Impersonate-User", "Impersonate-Group", "Impersonate-Uid"} {
				r.Out.Header.Del(h)
			}
			for h := range r.Out.Header {
				if strings.HasPrefix(h, "Impersonate-Extra-") {
					r.Out.Header.Del(h)
				}
			}
		},
		Transport:     transport,
		FlushInterval: -1,
	}, nil
}

// ServeHTTP checks Host, Origin and the token, then serves the views or
// forwards to the API server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hosts[r.Host] {
		http.Error(w, fmt.Sprintf("forbidden: host %q is not this server's address", r.Host), http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		http.Error(w, fmt.Sprintf("forbidden: origin %q is not this server", o), http.StatusForbidden)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" {
		if !s.tokenOK(t) {
			http.Error(w, "forbidden: wrong token: open the URL `knmstate ui` printed", http.StatusForbidden)
			return
		}
		// The token moves to a cookie the browser sends only to this
		// site (SameSite=Strict) and scripts cannot read; the address
		// bar loses it.
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(s.cookie)
	if err != nil || !s.tokenOK(c.Value) {
		http.Error(w, "forbidden: no token: open the URL `knmstate ui` printed", http.StatusForbidden)
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if isAPI(r.URL.Path) {
		s.proxy.ServeHTTP(w, r)
		return
	}
	if !s.built || s.assets == nil {
		http.Error(w, "this knmstate binary was built without its web views: build them with `make build` (npm ci and npm run build in web/), then rebuild knmstate; the API proxy works meanwhile", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; frame-ancestors 'none'")
	s.assets.ServeHTTP(w, r)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// isAPI says whether a path is the Kubernetes API's (forwarded) rather
// than one of the views' files.
func isAPI(p string) bool {
	return p == "/api" || p == "/apis" || p == "/version" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/")
}
