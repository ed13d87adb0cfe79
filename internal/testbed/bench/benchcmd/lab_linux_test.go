package benchcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWrites(t *testing.T) {
	raw := []byte(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="nmstate.io",resource="nodenetworkstates",scope="resource",subresource="status",verb="PUT",version="v1beta1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="nmstate.io",resource="nodenetworkstates",scope="cluster",subresource="",verb="LIST",version="v1beta1"} 9
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="nmstate.io",resource="nodenetworkstates",scope="resource",subresource="",verb="PATCH",version="v1beta1"} 2
apiserver_request_duration_seconds_bucket{verb="PUT",le="0.1"} 7
`)
	got, err := parseWrites(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []requestCount{
		{verb: "PUT", group: "nmstate.io", resource: "nodenetworkstates", subresource: "status", n: 4},
		{verb: "POST", resource: "nodes", n: 3},
		{verb: "PATCH", group: "nmstate.io", resource: "nodenetworkstates", n: 2},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(requestCount{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([2]float64{6, 6}, [2]float64{sumWrites(got, isNNS), sumWrites(got, isKnmstateWrite)}); diff != "" {
		t.Errorf("NNS writes, knmstate writes (-want +got):\n%s", diff)
	}
}

func TestChangedPaths(t *testing.T) {
	a := map[string]any{
		"interfaces": []any{map[string]any{"name": "eth0"}},
		"routes":     map[string]any{"running": []any{"r1", "r2"}, "config": []any{}},
		"hostname":   map[string]any{"running": "n1"},
	}
	b := map[string]any{
		"interfaces": []any{map[string]any{"name": "eth0"}},
		"routes":     map[string]any{"running": []any{"r1"}, "config": []any{}},
		"dns":        "x",
	}
	want := []string{"dns", "hostname", "routes.running"}
	if diff := cmp.Diff(want, changedPaths(a, b, 2)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := changedPaths(a, a, 2); len(got) != 0 {
		t.Errorf("changedPaths(a, a) = %v, want none", got)
	}
}
