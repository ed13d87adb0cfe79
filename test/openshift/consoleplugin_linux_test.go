//go:build kubelet

package openshift

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
	"github.com/knmstate/knmstate/internal/webhook"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// checkConsolePlugin: with the Console capability enabled (the lab's
// ClusterVersion says so), the operator deploys the console plugin for
// the NMState — the ConsolePlugin naming its Service, the Deployment
// Available, the Service with the service CA's serving certificate — and
// adds it to the console's spec.plugins; the Service answers over TLS with
// a certificate the service CA signed for its name, and serves the
// plugin's manifest.
func checkConsolePlugin(t *testing.T, st *lab.State) {
	t.Helper()
	name := manifest.ConsolePluginName
	begin := time.Now()
	suite.Eventually(t, 3*time.Minute, "the ConsolePlugin", func() error {
		out, err := kube(st).Try(t, "", "get", "consoleplugin", name, "-o", "jsonpath={.spec.backend.service.name}/{.spec.backend.service.namespace}:{.spec.backend.service.port}")
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("%s/%s:9443", name, ns); out != want {
			return fmt.Errorf("backend %s, want %s", out, want)
		}
		return nil
	})
	kube(st).MustIn(t, "", "-n", ns, "wait", "deploy/"+name, "--for", "condition=Available", "--timeout", "3m")
	t.Logf("console plugin: ConsolePlugin and its Deployment Available %.1f s after the check began", time.Since(begin).Seconds())
	if got := kube(st).MustIn(t, "", "-n", ns, "get", "service", name, "-o", `jsonpath={.metadata.annotations.service\.beta\.openshift\.io/serving-cert-secret-name}`); got != manifest.ConsolePluginServingSecret {
		t.Errorf("plugin Service asks the service CA for %q, want %q", got, manifest.ConsolePluginServingSecret)
	}
	suite.Eventually(t, time.Minute, "the plugin in the console's spec.plugins", func() error {
		out, err := kube(st).Try(t, "", "get", "consoles.operator.openshift.io", manifest.ConsoleName, "-o", "jsonpath={.spec.plugins}")
		if err != nil {
			return err
		}
		var plugins []string
		_ = json.Unmarshal([]byte(out), &plugins)
		for _, p := range plugins {
			if p == name {
				return nil
			}
		}
		return errors.New("spec.plugins " + out)
	})

	// The Service over TLS, from the node the plugin's pod runs on (its
	// ClusterIP through kube-proxy, as the console's bridge reaches it),
	// trusting only the service CA (its bundle, as injected into the
	// webhook configuration) for the Service's DNS name.
	bundle := kube(st).MustIn(t, "", "get", "validatingwebhookconfiguration", webhook.ConfigurationName, "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
	caPEM, err := base64.StdEncoding.DecodeString(bundle)
	if err != nil {
		t.Fatalf("service CA bundle: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("service CA bundle holds no certificate: %q", bundle)
	}
	clusterIP := kube(st).MustIn(t, "", "-n", ns, "get", "service", name, "-o", "jsonpath={.spec.clusterIP}")
	node := kube(st).MustIn(t, "", "-n", ns, "get", "pods", "-l", manifest.LabelComponent+"="+manifest.ComponentConsolePlugin, "-o", "jsonpath={.items[0].spec.nodeName}")
	netns := ""
	for _, n := range st.Nodes {
		if n.Name == node {
			netns = n.NetNS
		}
	}
	if netns == "" {
		t.Fatalf("the plugin's pod runs on %q, no lab node", node)
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := nsrun.DoPath(netns, func() (err error) {
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	serverName := name + "." + ns + ".svc"
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     dial,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12},
	}}
	resp, err := client.Get("https://" + net.JoinHostPort(clusterIP, "9443") + "/plugin-manifest.json")
	if err != nil {
		t.Fatalf("the plugin Service over TLS (service CA, %s): %v", serverName, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name       string            `json:"name"`
		Extensions []json.RawMessage `json:"extensions"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &m) != nil || m.Name != name || len(m.Extensions) == 0 {
		t.Fatalf("plugin-manifest.json: %d %.300s", resp.StatusCode, body)
	}
	issuer := resp.TLS.PeerCertificates[0].Issuer.CommonName
	if !strings.HasPrefix(issuer, "openshift-service-serving-signer") {
		t.Errorf("served certificate issued by %q, want the service CA", issuer)
	}
	t.Logf("console plugin: %s answers over TLS (%s, issuer %s) with its manifest (%d extensions)", serverName, tls.VersionName(resp.TLS.Version), issuer, len(m.Extensions))
}
