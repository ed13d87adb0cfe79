package handler

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/metrics/metricstest"
	"github.com/knmstate/knmstate/internal/scrape"
)

// scrapeCounter reads the sum of a counter's series with labels from a
// metrics endpoint.
func scrapeCounter(url, name string, labels map[string]string) (float64, error) {
	f, err := metricstest.Get(http.DefaultClient, url, "")
	if err != nil {
		return 0, err
	}
	return f.Sum(name, labels), nil
}

// TestHandlerMetricsEndpoint runs a handler with its endpoint and reads its
// NodeNetworkState writes there, as Prometheus would.
func TestHandlerMetricsEndpoint(t *testing.T) {
	n := newNode(t, "nns-metrics")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	w := n.watchNNS(t, "")
	n.start(t, func(o *Options) { o.Metrics = scrape.Options{BindAddress: addr} })
	waitFor(t, w, "node network state with status", hasStatus)
	url := "http://" + addr + "/metrics"
	// wait waits until the endpoint shows at least want writes of kind.
	wait := func(kind string, want float64) {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for {
			got, err := scrapeCounter(url, "knmstate_handler_nns_writes_total", map[string]string{"node": n.name, "kind": kind})
			if err == nil && got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s writes: %v (%v), want %v", kind, got, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("create", 1)
	wait("status", 1)
	before, err := scrapeCounter(url, "knmstate_handler_nns_writes_total", map[string]string{"node": n.name, "kind": "status"})
	if err != nil {
		t.Fatal(err)
	}
	if created, _ := scrapeCounter(url, "knmstate_handler_nns_writes_total", map[string]string{"node": n.name, "kind": "create"}); created != 1 {
		t.Errorf("%v creates, want 1", created)
	}
	n.veth(t, "metrics-a", "metrics-b")
	waitFor(t, w, "the new veth reported", hasIface("metrics-a"))
	wait("status", before+1)
}
