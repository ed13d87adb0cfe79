package handler

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/knmstate/knmstate/internal/scrape"
)

// scrapeCounter reads one counter series from a metrics endpoint (0 when
// absent).
func scrapeCounter(url, name string, labels map[string]string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
series:
	for _, m := range mfs[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue series
			}
		}
		return m.GetCounter().GetValue(), nil
	}
	return 0, nil
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
