// Package metricstest reads metrics in tests the way Prometheus does: one
// scrape of an endpoint (or one gather of a registry) as metric families,
// and the sum or the series of one metric whose labels include some.
package metricstest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape, by metric name.
type Families map[string]*dto.MetricFamily

// Get scrapes url with hc, with a bearer token unless token is "".
func Get(hc *http.Client, url, token string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fams, nil
}

// Gather reads a registry.
func Gather(g prometheus.Gatherer) (Families, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out, nil
}

// matching returns name's series whose labels include want.
func (f Families) matching(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
series:
	for _, m := range f[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue series
			}
		}
		out = append(out, m)
	}
	return out
}

// Sum adds the values of name's series whose labels include want:
// gauges and counters by value, histograms by sample count.
func (f Families) Sum(name string, want map[string]string) float64 {
	var total float64
	for _, m := range f.matching(name, want) {
		total += m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return total
}

// Series lists the label sets of name's series whose labels include want,
// each "k=v,k=v" (sorted): what tells no series from a series at 0.
func (f Families) Series(name string, want map[string]string) []string {
	var out []string
	for _, m := range f.matching(name, want) {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(kv)
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}
