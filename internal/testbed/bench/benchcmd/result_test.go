package benchcmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sampleResults covers every shape of row: with and without baseline,
// large and small numbers, a zero target, a row without a value, with and
// without previous figures.
func sampleResults() []Result {
	prev := Result{Name: "engine.apply50", Value: num(0.0431), Unit: "s", Target: "<= 1.5", Note: "median of 5"}.withRatio(0.0329)
	return []Result{
		Result{Name: "engine.apply50", Value: num(0.0421), Unit: "s", Target: "<= 1.5", Note: "median of 5",
			Previous: prev.Value, PreviousRatio: prev.Ratio}.withRatio(0.0307),
		{Name: "model.pipeline1000", Value: num(19722050.4), Unit: "ns", Target: "-", Previous: num(20102000)},
		{Name: "nns.idle.writes", Value: num(0), Unit: "writes/node/min", Target: "0"},
		Result{Name: "nns.idle.latency", Value: num(0.2314), Unit: "s", Target: "< 1", Note: "a note\nover two lines"}.withRatio(60),
		{Name: "policy.available3", Note: "not measurable: no enactment"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", b.Bytes())
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	golden(t, "results.json.golden", b.Bytes())
}

func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("[]\n", b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWithPrevious(t *testing.T) {
	cur := []Result{
		Result{Name: "engine.apply50", Value: num(0.04), Unit: "s"}.withRatio(0.032),
		{Name: "nns.idle.writes", Value: num(0)},
		{Name: "handler.rss.idle", Value: num(20)},
	}
	prev := []Result{
		// A previous run's own previous figures are not carried over.
		Result{Name: "engine.apply50", Value: num(0.05), Previous: num(1), PreviousRatio: num(9)}.withRatio(0.04),
		{Name: "nns.idle.writes", Value: num(2)},
		{Name: "policy.available3", Value: num(0.4)},
		{Name: "handler.rss.idle", Note: "failed: no lab"},
	}
	got := WithPrevious(cur, prev)
	want := []Result{
		Result{Name: "engine.apply50", Value: num(0.04), Unit: "s", Previous: num(0.05), PreviousRatio: num(1.25)}.withRatio(0.032),
		{Name: "nns.idle.writes", Value: num(0), Previous: num(2)},
		{Name: "handler.rss.idle", Value: num(20)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if cur[0].Previous != nil {
		t.Errorf("WithPrevious modified its input: %+v", cur[0])
	}
}

func TestReadResultsReadsWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleResults(), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ReadResults(bytes.NewBufferString("{")); err == nil {
		t.Error("ReadResults of a torn file: no error")
	}
}
