package consoleplugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/consoleplugin"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/testbed/suite"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/web/plugin"
)

const chromiumPath = "/usr/bin/chromium"

// hostDir is the built test page (npm run build in web/plugin).
const hostDir = "../../web/plugin/build/host"

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "consoleplugin"}, func(k *suite.Kit) int {
		e, err := k.ControlPlane(context.Background())
		if err != nil {
			k.Logf("%v", err)
			return 1
		}
		env = e
		return m.Run()
	}))
}

// serveCert makes a CA (the service CA's stand-in) and a serving
// certificate for the plugin Service's name, written to dir as the
// service CA's Secret is mounted; it returns the CA's pool.
func serveCert(t *testing.T, dir, host string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test service CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host},
		DNSNames: []string{host}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// startPlugin runs `knmstate console-plugin`'s server with the plugin
// embedded in this test binary, and returns its address.
func startPlugin(t *testing.T, certDir string) string {
	t.Helper()
	assets, built := plugin.Assets()
	if !built {
		t.Fatal("this test binary holds no console plugin: build it first (make web)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- consoleplugin.Run(ctx, consoleplugin.Options{Listen: addr, CertDir: certDir, Assets: assets, Built: true, TLSMinVersion: "VersionTLS12"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("console-plugin server: %v", err)
		}
	})
	return addr
}

// front is the console's stand-in: the test page at every other path,
// the plugin under /api/plugins/NAME/ through TLS to the plugin server
// (verified against the CA, by the Service's name, as the bridge does),
// and the API server under /api/kubernetes/.
func front(t *testing.T, pluginAddr, serviceName string, pool *x509.CertPool) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(hostDir, "host.js")); err != nil {
		t.Fatalf("the test page is not built (make web): %v", err)
	}
	pluginProxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "https", Host: pluginAddr})
	pluginProxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serviceName}}
	apiURL, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiTransport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiProxy := httputil.NewSingleHostReverseProxy(apiURL)
	apiProxy.Transport = apiTransport
	apiProxy.FlushInterval = -1 // watches stream
	mux := http.NewServeMux()
	prefix := "/api/plugins/" + manifest.ConsolePluginName + "/"
	mux.Handle(prefix, http.StripPrefix(strings.TrimSuffix(prefix, "/"), pluginProxy))
	mux.Handle("/api/kubernetes/", http.StripPrefix("/api/kubernetes", apiProxy))
	mux.Handle("/host/", http.StripPrefix("/host/", http.FileServer(http.Dir(hostDir))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(hostDir, "index.html"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// objects creates what the pages show: a node's state with eth1 under the
// Linux bridge br-plugin, and a policy; removed when the test ends.
func objects(t *testing.T, node, policy string) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	nnsGVR := schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkstates"}
	nncpGVR := schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
	t.Cleanup(func() {
		_ = dyn.Resource(nnsGVR).Delete(ctx, node, metav1.DeleteOptions{})
		_ = dyn.Resource(nncpGVR).Delete(ctx, policy, metav1.DeleteOptions{})
	})
	var nns unstructured.Unstructured
	if err := json.Unmarshal([]byte(`{"apiVersion":"nmstate.io/v1beta1","kind":"NodeNetworkState","metadata":{"name":"`+node+`"}}`), &nns.Object); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(nnsGVR).Create(ctx, &nns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("NNS: %v", err)
	}
	state := map[string]any{"interfaces": []any{
		map[string]any{"name": "eth1", "type": "ethernet", "state": "up", "mtu": int64(1500), "controller": "br-plugin"},
		map[string]any{"name": "br-plugin", "type": "linux-bridge", "state": "up", "mtu": int64(1500),
			"bridge": map[string]any{"port": []any{map[string]any{"name": "eth1"}}},
			"ipv4":   map[string]any{"enabled": true, "address": []any{map[string]any{"ip": "192.0.2.10", "prefix-length": int64(24)}}}},
	}}
	if err := unstructured.SetNestedField(got.Object, state, "status", "currentState"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(nnsGVR).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("NNS status: %v", err)
	}
	var nncp unstructured.Unstructured
	if err := json.Unmarshal([]byte(`{"apiVersion":"nmstate.io/v1","kind":"NodeNetworkConfigurationPolicy","metadata":{"name":"`+policy+`"},
		"spec":{"desiredState":{"interfaces":[{"name":"br-plugin","type":"linux-bridge","state":"up","bridge":{"port":[{"name":"eth1"}]}}]}}}`), &nncp.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(nncpGVR).Create(ctx, &nncp, metav1.CreateOptions{}); err != nil {
		t.Fatalf("NNCP: %v", err)
	}
	// The node's enactment, failing with a message (as a handler writes it).
	nnceGVR := schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkconfigurationenactments"}
	enactment := node + "." + policy
	t.Cleanup(func() { _ = dyn.Resource(nnceGVR).Delete(ctx, enactment, metav1.DeleteOptions{}) })
	var nnce unstructured.Unstructured
	if err := json.Unmarshal([]byte(`{"apiVersion":"nmstate.io/v1beta1","kind":"NodeNetworkConfigurationEnactment","metadata":{"name":"`+enactment+`",
		"labels":{"nmstate.io/policy":"`+policy+`","nmstate.io/node":"`+node+`"}}}`), &nnce.Object); err != nil {
		t.Fatal(err)
	}
	e, err := dyn.Resource(nnceGVR).Create(ctx, &nnce, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("NNCE: %v", err)
	}
	conds := []any{map[string]any{"type": "Failing", "status": "True", "reason": "FailedToConfigure", "message": failMessage,
		"lastTransitionTime": "2026-01-01T00:00:00Z", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}}
	if err := unstructured.SetNestedSlice(e.Object, conds, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(nnceGVR).UpdateStatus(ctx, e, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("NNCE status: %v", err)
	}
}

// failMessage is the failing enactment's message the policies page shows.
const failMessage = "linking eth1 to br-plugin: no such device"

func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing (make setup installs it): %v", chromiumPath, err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // root, as this machine runs tests
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// waitJS polls a JavaScript condition until it holds.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, tg)
		return chromedp.Void{}, err
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
	}
}

// TestExposedModulesLoad opens each page the plugin exposes, as the
// console would at its path, and checks that it renders the cluster's
// objects (from the real API server, through the page's watch).
func TestExposedModulesLoad(t *testing.T) {
	const node, policy = "plugin-node", "plugin-br"
	service := manifest.ConsolePluginName + "." + manifest.OpenShiftNamespace + ".svc"
	certDir := t.TempDir()
	pool := serveCert(t, certDir, service)
	base := front(t, startPlugin(t, certDir), service, pool)
	objects(t, node, policy)
	b := browser(t)

	for _, tc := range []struct {
		module, path, ready string
	}{
		// The topology of the node: the bridge's port drawn as an edge.
		{"TopologyPage", "/nmstate/topology/" + node, `document.querySelector('[data-test="topology"][data-node="` + node + `"] [data-kind="edge"][data-id="port:eth1->br-plugin"]') !== null`},
		// The policy list counting the node Failing, its drawer (opened by
		// the path's name) with the node's message.
		{"PoliciesPage", "/nmstate/policies/" + policy, `document.querySelector('[data-policy="` + policy + `"] [data-count="Failing"]')?.textContent === '1' && ` +
			`document.querySelector('[data-test="policy-drawer"] [data-node="` + node + `"][data-state="Failing"] [data-test="enactment-message"]')?.textContent.includes('` + failMessage + `')`},
		// The states table with the node's row.
		{"StatesPage", "/nmstate/states", `document.querySelector('[data-test="states"] [data-node="` + node + `"]') !== null`},
	} {
		t.Run(tc.module, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(b)
			defer cancel()
			ctx, cancelT := context.WithTimeout(ctx, time.Minute)
			defer cancelT()
			_, err := chromedp.Run(ctx, chromedp.Navigate(base+tc.path+"?module="+tc.module))
			if err != nil {
				t.Fatalf("opening %s: %v", tc.path, err)
			}
			// Loaded (or failed) first, so a failure says why.
			if err := chromedp.Do(ctx, waitJS(`window.knmstateHost && window.knmstateHost.state !== 'loading'`)); err != nil {
				t.Fatalf("module %s: the page never finished loading it: %v", tc.module, err)
			}
			if err := chromedp.Do(ctx, waitJS(`window.knmstateHost.state === 'failed' || (`+tc.ready+`)`)); err != nil {
				screenshot(t, ctx, "failed-"+tc.module)
				t.Fatalf("module %s: not rendered: %v", tc.module, err)
			}
			host, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`window.knmstateHost`))
			if err != nil {
				t.Fatal(err)
			}
			if host["state"] != "rendered" {
				screenshot(t, ctx, "failed-"+tc.module)
				t.Fatalf("module %s: %v: %v", tc.module, host["state"], host["error"])
			}
			screenshot(t, ctx, "plugin-"+tc.module)
		})
	}

	// The form writes through the console's fetch: the API server's
	// refusal of the dry-run shows under the field it names, nothing is
	// created; the valid form creates the policy.
	t.Run("form", func(t *testing.T) {
		const created = "plugin-form"
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		nncps := dyn.Resource(schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"})
		t.Cleanup(func() { _ = nncps.Delete(context.Background(), created, metav1.DeleteOptions{}) })
		ctx, cancel := chromedp.NewContext(b)
		defer cancel()
		ctx, cancelT := context.WithTimeout(ctx, time.Minute)
		defer cancelT()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/nmstate/policies?module=PoliciesPage")); err != nil {
			t.Fatal(err)
		}
		err = chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS(`[data-test="create-form"]`)),
			chromedp.SendKeys(chromedp.CSS(`#form-name`), "Bad_Name"),
			chromedp.SendKeys(chromedp.CSS(`#form-ifaceName`), "br-form"),
			chromedp.Click(chromedp.CSS(`[data-test="form-create"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test="error-name"]`)))
		if err != nil {
			screenshot(t, ctx, "failed-form")
			t.Fatalf("refused name: %v", err)
		}
		nameErr, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-test="error-name"]`)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(nameErr, "metadata.name") {
			t.Errorf("error under the name field: %q, want the API server's metadata.name error", nameErr)
		}
		list, err := nncps.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if strings.Contains(strings.ToLower(p.GetName()), "bad") {
				t.Fatalf("the dry-run left a policy: %s", p.GetName())
			}
		}
		err = chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS(`#form-name`), strings.Repeat(kb.Backspace, len("Bad_Name"))+created),
			chromedp.Click(chromedp.CSS(`[data-test="form-create"]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-test="form-create"]`)),
			waitJS(`document.querySelector('[data-policy="`+created+`"]') !== null`))
		if err != nil {
			screenshot(t, ctx, "failed-form")
			t.Fatalf("valid form: %v", err)
		}
		if _, err := nncps.Get(context.Background(), created, metav1.GetOptions{}); err != nil {
			t.Errorf("the form's policy: %v", err)
		}
	})

	// Navigating inside a page moves the console's path: the policy link
	// opens its drawer at /nmstate/policies/NAME.
	t.Run("navigation", func(t *testing.T) {
		ctx, cancel := chromedp.NewContext(b)
		defer cancel()
		ctx, cancelT := context.WithTimeout(ctx, time.Minute)
		defer cancelT()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/nmstate/policies?module=PoliciesPage")); err != nil {
			t.Fatal(err)
		}
		err := chromedp.Do(ctx,
			waitJS(`document.querySelector('[data-policy="`+policy+`"] [data-test="policy-open"]') !== null`),
			chromedp.Click(chromedp.CSS(`[data-policy="`+policy+`"] [data-test="policy-open"]`)),
			waitJS(`document.querySelector('[data-test="policy-drawer"]') !== null`),
		)
		if err != nil {
			screenshot(t, ctx, "failed-navigation")
			t.Fatalf("opening the policy from the list: %v", err)
		}
		path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "/nmstate/policies/" + policy; path != want {
			t.Errorf("path %q after opening the policy, want %q", path, want)
		}
		// An entry the console's router counts like its own.
		idx, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`history.state && typeof history.state.key === 'string' ? history.state.idx : -1`))
		if err != nil {
			t.Fatal(err)
		}
		if idx < 1 {
			t.Errorf("history entry index %v, want a react-router entry after the first", idx)
		}
	})
}
