package nnsencoding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	r1 = `{"destination":"198.51.100.0/24","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"eth1","table-id":254}`
	r2 = `{"destination":"203.0.113.0/24","metric":100,"next-hop-address":"192.0.2.1","next-hop-interface":"eth1","table-id":254}`
	// r2 with another metric: not the same route.
	r2m = `{"destination":"203.0.113.0/24","metric":101,"next-hop-address":"192.0.2.1","next-hop-interface":"eth1","table-id":254}`
	// A running-only route (a DHCP default route).
	dflt = `{"destination":"0.0.0.0/0","metric":1024,"next-hop-address":"192.0.2.254","next-hop-interface":"eth0","table-id":254}`
)

func state(config, running string) string {
	return `{"interfaces":[{"name":"eth1","state":"up","type":"ethernet"}],"routes":{"config":[` + config + `],"running":[` + running + `]}}`
}

func TestCompactAndExpand(t *testing.T) {
	for _, c := range []struct {
		name, full, compact, expanded string
	}{{
		name:    "configured routes leave running, others stay",
		full:    state(r1+","+r2, dflt+","+r1+","+r2),
		compact: state(r1+","+r2, dflt),
		// The configured routes follow the others.
		expanded: state(r1+","+r2, dflt+","+r1+","+r2),
	}, {
		name:     "a route equal but for one value stays",
		full:     state(r1+","+r2m, r1+","+r2),
		compact:  state(r1+","+r2m, r2),
		expanded: state(r1+","+r2m, r2+","+r1+","+r2m),
	}, {
		name:     "every running route configured: running is empty, not gone",
		full:     state(r1, r1),
		compact:  state(r1, ""),
		expanded: state(r1, r1),
	}, {
		name:     "no configured routes",
		full:     state("", dflt),
		compact:  state("", dflt),
		expanded: state("", dflt),
	}, {
		name:     "no routes at all",
		full:     `{"interfaces":[]}`,
		compact:  `{"interfaces":[]}`,
		expanded: `{"interfaces":[]}`,
	}, {
		name:     "no running list: left alone",
		full:     `{"routes":{"config":[` + r1 + `]}}`,
		compact:  `{"routes":{"config":[` + r1 + `]}}`,
		expanded: `{"routes":{"config":[` + r1 + `]}}`,
	}, {
		name:     "numbers kept as written, keys sorted",
		full:     `{"routes":{"running":[{"metric":1e2,"destination":"0.0.0.0/0"}],"config":[]},"a":1.50}`,
		compact:  `{"a":1.50,"routes":{"config":[],"running":[{"destination":"0.0.0.0/0","metric":1e2}]}}`,
		expanded: `{"a":1.50,"routes":{"config":[],"running":[{"destination":"0.0.0.0/0","metric":1e2}]}}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			compact, err := CompactJSON([]byte(c.full))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.compact, string(compact)); diff != "" {
				t.Errorf("CompactJSON (-want +got):\n%s", diff)
			}
			expanded, err := ExpandJSON(compact)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.expanded, string(expanded)); diff != "" {
				t.Errorf("ExpandJSON (-want +got):\n%s", diff)
			}
			again, err := ExpandJSON(expanded)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(expanded), string(again)); diff != "" {
				t.Errorf("ExpandJSON is not idempotent (-once +twice):\n%s", diff)
			}
		})
	}
}

// TestExpandGivesTheSameRoutes holds the expansion to the full state's
// routes as a set, on a node-sized state with shuffled running order.
func TestExpandGivesTheSameRoutes(t *testing.T) {
	var config, running []string
	for i := range 3000 {
		r := fmt.Sprintf(`{"destination":"172.%d.%d.0/24","metric":0,"next-hop-address":"10.0.%d.2","next-hop-interface":"eth1.%d","table-id":254}`, 16+i/256, i%256, i%250, i%1500)
		config = append(config, r)
	}
	running = append(running, dflt)
	for i := len(config) - 1; i >= 0; i-- {
		running = append(running, config[i])
	}
	full := []byte(state(strings.Join(config, ","), strings.Join(running, ",")))
	compact, err := CompactJSON(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(compact) > len(full)*2/3 {
		t.Errorf("compact state %d bytes, full %d: less than a third saved", len(compact), len(full))
	}
	expanded, err := ExpandJSON(compact)
	if err != nil {
		t.Fatal(err)
	}
	routes := func(doc []byte) map[string]int {
		var st struct {
			Routes struct{ Config, Running []json.RawMessage }
		}
		if err := json.Unmarshal(doc, &st); err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, r := range st.Routes.Running {
			var b bytes.Buffer
			json.Compact(&b, r)
			m["running "+b.String()]++
		}
		for _, r := range st.Routes.Config {
			var b bytes.Buffer
			json.Compact(&b, r)
			m["config "+b.String()]++
		}
		return m
	}
	if diff := cmp.Diff(routes(full), routes(expanded)); diff != "" {
		t.Errorf("routes (-full +expanded):\n%s", diff)
	}
}

func TestExpandByAnnotation(t *testing.T) {
	compact := []byte(state(r1, ""))
	for _, c := range []struct {
		name        string
		annotations map[string]string
		want        string
		wantErr     string
	}{
		{"no annotation: as it is", nil, state(r1, ""), ""},
		{"compact-v1", map[string]string{Annotation: CompactV1}, state(r1, r1), ""},
		{"unknown encoding", map[string]string{Annotation: "compact-v9"}, "", `encoding "compact-v9" is not known`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Expand(c.annotations, compact)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompactRejectsWhatIsNotAState(t *testing.T) {
	for _, in := range []string{"", "[]", "{", `"x"`} {
		if _, err := CompactJSON([]byte(in)); err == nil {
			t.Errorf("CompactJSON(%q): no error", in)
		}
		if _, err := ExpandJSON([]byte(in)); err == nil {
			t.Errorf("ExpandJSON(%q): no error", in)
		}
	}
}
