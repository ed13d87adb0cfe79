package nmstate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// AppendCompactJSON is EncodeJSON without the whitespace, for every
// nmstate example and every state-model case (and for text that needs
// escaping).
func TestAppendCompactJSONIsEncodeJSONCompacted(t *testing.T) {
	files, err := filepath.Glob("testdata/nmstate-examples/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob("testdata/cases/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, cases...)
	if len(files) < 10 {
		t.Fatalf("only %d input files found", len(files))
	}
	desc := "a \"quoted\" <tag> & \\ tab\t é \x01 \xff"
	states := map[string]*State{
		"escaping": {Interfaces: []Interface{{Name: "eth0", Description: &desc}}},
		"empty":    {},
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Decode(data)
		if err != nil {
			continue // invalid on purpose (cases of rejected input)
		}
		states[f] = s
	}
	for name, s := range states {
		full, err := EncodeJSON(s)
		if err != nil {
			t.Fatalf("%s: EncodeJSON: %v", name, err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, full); err != nil {
			t.Fatalf("%s: compacting: %v", name, err)
		}
		got, err := AppendCompactJSON([]byte("x"), s)
		if err != nil {
			t.Fatalf("%s: AppendCompactJSON: %v", name, err)
		}
		if diff := cmp.Diff("x"+want.String(), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
