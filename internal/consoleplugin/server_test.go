package consoleplugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"
)

func TestHandler(t *testing.T) {
	assets := fstest.MapFS{
		"plugin-manifest.json":                        {Data: []byte(`{"name":"knmstate-console-plugin"}`)},
		"plugin-entry.js":                             {Data: []byte("window.loadPluginEntry()")},
		"exposed-A-chunk-1.min.js":                    {Data: []byte("chunk")},
		"PLACEHOLDER":                                 {Data: []byte("placeholder")},
		"exposed-A-chunk-5c6204d825802c2c349f.min.js": {Data: []byte("chunk")},
		"plugin-entry.72d668a00536922a4075.min.js":    {Data: []byte("entry")},
		"vendors-chunk-2.min.js.map":                  {Data: []byte("{}")},
	}
	for _, tc := range []struct {
		name, method, path string
		built              bool
		code               int
		ctype, cache, body string
	}{
		{name: "manifest", method: "GET", path: "/plugin-manifest.json", built: true, code: 200, ctype: "application/json", cache: "no-cache", body: `{"name":"knmstate-console-plugin"}`},
		{name: "root is the manifest", method: "GET", path: "/", built: true, code: 200, ctype: "application/json", cache: "no-cache"},
		{name: "entry script", method: "GET", path: "/plugin-entry.js", built: true, code: 200, ctype: "text/javascript; charset=utf-8", body: "window.loadPluginEntry()"},
		{name: "chunk without a hash", method: "HEAD", path: "/exposed-A-chunk-1.min.js", built: true, code: 200, ctype: "text/javascript; charset=utf-8"},
		{name: "hashed chunk", method: "GET", path: "/exposed-A-chunk-5c6204d825802c2c349f.min.js", built: true, code: 200, cache: "public, max-age=31536000, immutable"},
		{name: "hashed entry", method: "GET", path: "/plugin-entry.72d668a00536922a4075.min.js", built: true, code: 200, cache: "public, max-age=31536000, immutable", body: "entry"},
		{name: "missing", method: "GET", path: "/nothing.js", built: true, code: 404},
		{name: "placeholder is not served", method: "GET", path: "/PLACEHOLDER", built: true, code: 404},
		{name: "no way up", method: "GET", path: "/../../etc/passwd", built: true, code: 404},
		{name: "read only", method: "POST", path: "/plugin-manifest.json", built: true, code: 405},
		{name: "not built", method: "GET", path: "/plugin-manifest.json", built: false, code: 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler(assets, tc.built).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.code {
				t.Fatalf("%s %s: %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.code, rec.Body)
			}
			if tc.ctype != "" && rec.Header().Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if rec.Header().Get("Cache-Control") != tc.cache {
				t.Errorf("Cache-Control %q, want %q", rec.Header().Get("Cache-Control"), tc.cache)
			}
			if tc.body != "" && rec.Body.String() != tc.body {
				t.Errorf("body %q, want %q", rec.Body, tc.body)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{name: "defaults", o: Options{CertDir: "/d"}, ok: true},
		{name: "no cert dir", o: Options{}},
		{name: "bad listen", o: Options{CertDir: "/d", Listen: "9443"}},
		{name: "bad TLS version", o: Options{CertDir: "/d", TLSMinVersion: "TLS1.2"}},
		{name: "profile", o: Options{CertDir: "/d", TLSMinVersion: "VersionTLS13"}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// writeCert writes a self-signed serving certificate for names into dir
// (tls.crt, tls.key) with the given modification time, and returns it.
func writeCert(t *testing.T, dir string, serial int64, mod time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "knmstate-console-plugin.openshift-nmstate.svc"},
		DNSNames:     []string{"knmstate-console-plugin.openshift-nmstate.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{crt, keyFile} {
		if err := os.Chtimes(f, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestServeTLS: the server answers over TLS with the directory's
// certificate, and with the renewed one once the files change.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	first := writeCert(t, dir, 1, time.Unix(1_000_000, 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: addr, CertDir: dir, Built: true, Assets: fstest.MapFS{"plugin-manifest.json": {Data: []byte("{}")}}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	get := func(want *x509.Certificate) {
		t.Helper()
		pool := x509.NewCertPool()
		pool.AddCert(want)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
		var resp *http.Response
		var err error
		// The server starts in the background: retry the dial only.
		for i := 0; i < 100; i++ {
			resp, err = c.Get("https://" + addr + "/plugin-manifest.json")
			var op *net.OpError
			if err == nil || !errors.As(err, &op) || op.Op != "dial" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("GET with the certificate %d trusted: %v", want.SerialNumber, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "{}" {
			t.Fatalf("GET: %d %q", resp.StatusCode, body)
		}
		if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(want.SerialNumber) != 0 {
			t.Fatalf("served certificate %d, want %d", got, want.SerialNumber)
		}
	}
	get(first)
	second := writeCert(t, dir, 2, time.Unix(2_000_000, 0))
	get(second)
}

func TestRunNeedsCertificate(t *testing.T) {
	err := Run(context.Background(), Options{Listen: "127.0.0.1:0", CertDir: t.TempDir()})
	if err == nil {
		t.Fatal("Run without tls.crt: no error")
	}
}
