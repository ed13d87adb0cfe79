package nmstate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// FuzzDecodeValidate checks that no input makes decoding, validation or
// encoding panic, that failures are reported as a non-empty ErrorList, and
// that whatever decodes round-trips through both canonical encodings.
func FuzzDecodeValidate(f *testing.F) {
	for _, pattern := range []string{"testdata/nmstate-examples/*.yml", "testdata/knmstate-examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"interfaces":[{"name":"eth1","type":"ethernet","ipv6":{"token":"::1"}}]}`))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := nmstate.Decode(data)
		if err != nil {
			var l nmstate.ErrorList
			if !errors.As(err, &l) || len(l) == 0 {
				t.Fatalf("decode error is not a non-empty ErrorList: %v", err)
			}
			return
		}
		for _, e := range append(nmstate.Validate(s, nil), nmstate.Validate(s, &nmstate.State{})...) {
			if e.Kind == 0 || e.Detail == "" {
				t.Fatalf("validation error without kind or detail: %#v", e)
			}
		}
		for _, enc := range []func(*nmstate.State) ([]byte, error){nmstate.EncodeYAML, nmstate.EncodeJSON} {
			out, err := enc(s)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			back, err := nmstate.Decode(out)
			if err != nil {
				t.Fatalf("canonical output does not decode: %v\n%s", err, out)
			}
			if diff := cmp.Diff(s, back, cmpOpts); diff != "" {
				t.Fatalf("round trip (-want +got):\n%s\n%s", diff, out)
			}
		}
	})
}
