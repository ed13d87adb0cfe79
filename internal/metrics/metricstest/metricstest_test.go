package metricstest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "g"}, []string{"node", "type"})
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"node"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h"}, []string{"node"})
	reg.MustRegister(g, c, h)
	g.WithLabelValues("n1", "bridge").Set(2)
	g.WithLabelValues("n2", "bridge").Set(1)
	g.WithLabelValues("n1", "veth").Set(0)
	c.WithLabelValues("n1").Add(3)
	h.WithLabelValues("n1").Observe(1)
	h.WithLabelValues("n1").Observe(2)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	got, err := Get(http.DefaultClient, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	gathered, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Families{got, gathered} {
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"g", map[string]string{"type": "bridge"}, 3},
			{"g", map[string]string{"node": "n1", "type": "bridge"}, 2},
			{"g", map[string]string{"type": "bond"}, 0},
			{"c_total", nil, 3},
			{"h_seconds", map[string]string{"node": "n1"}, 2},
			{"missing", nil, 0},
		} {
			if s := f.Sum(tc.name, tc.labels); s != tc.want {
				t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.labels, s, tc.want)
			}
		}
		if diff := cmp.Diff([]string{"node=n1,type=bridge", "node=n1,type=veth"}, f.Series("g", map[string]string{"node": "n1"})); diff != "" {
			t.Errorf("Series (-want +got):\n%s", diff)
		}
	}
}
