package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/nmstatectl"
	"github.com/knmstate/knmstate/internal/version"
)

// TestNmstatectl: knmstate is nmstatectl under that name (a symlink) and
// as its nmstatectl subcommand, exit statuses included.
func TestNmstatectl(t *testing.T) {
	tests := []struct {
		name     string // argv[0]'s base name
		args     []string
		stdin    string
		wantOut  string
		wantCode int // 0: no error
	}{
		{name: "nmstatectl", args: []string{"version"}, wantOut: "nmstatectl " + version.Version + "\n"},
		{name: "knmstate", args: []string{"nmstatectl", "version"}, wantOut: "nmstatectl " + version.Version + "\n"},
		{name: "knmstate", args: []string{"nmstatectl", "format"}, stdin: "interfaces: [{name: eth1, state: up}]\n",
			wantOut: "interfaces:\n  - name: eth1\n    state: up\n"},
		{name: "nmstatectl", args: []string{"format"}, stdin: "interfaces: [{name: eth1, bogus: 1}]\n", wantCode: 1},
		{name: "knmstate", args: []string{"nmstatectl", "format"}, stdin: "interfaces: [{name: eth1, bogus: 1}]\n", wantCode: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCmd(tc.name)
			var out, errOut bytes.Buffer
			root.SetArgs(tc.args)
			root.SetIn(strings.NewReader(tc.stdin))
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.ExecuteContext(context.Background())
			var ee *nmstatectl.ExitError
			switch {
			case tc.wantCode == 0 && err != nil:
				t.Fatalf("error %v\nstderr:\n%s", err, errOut.String())
			case tc.wantCode != 0 && (!errors.As(err, &ee) || ee.Code != tc.wantCode):
				t.Fatalf("error %v, want exit status %d", err, tc.wantCode)
			}
			if tc.wantCode == 0 {
				if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
		})
	}
}
