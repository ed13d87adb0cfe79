package handler

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/version"
)

func TestOptionsValidate(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	tests := []struct {
		name    string
		opts    Options
		wantErr []string // substrings, one per expected problem
	}{
		{name: "minimal", opts: Options{Node: "node1", Config: cfg}},
		{name: "no node, no config", opts: Options{}, wantErr: []string{"node: required", "config: required"}},
		{name: "bad node name", opts: Options{Node: "Node_1", Config: cfg}, wantErr: []string{`node: "Node_1" is not a valid node name`}},
		{name: "negative durations", opts: Options{Node: "n", Config: cfg, Resync: -1, Debounce: -time.Second}, wantErr: []string{"resync: -1ns is negative", "debounce: -1s is negative"}},
		{name: "bad pattern", opts: Options{Node: "n", Config: cfg, Filter: &FilterOptions{UnmanagedVeth: []string{"veth["}}}, wantErr: []string{`filter.unmanagedVeth[0]: "veth["`}},
		{name: "bad label", opts: Options{Node: "n", Config: cfg, Labels: map[string]string{"a/b/c": "x"}}, wantErr: []string{"labels[a/b/c]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: no error, want %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{Node: "node1", Config: &rest.Config{}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Resync != DefaultResync || o.Debounce != DefaultDebounce || o.Version != version.Version || o.Filter == nil || len(o.Filter.UnmanagedVeth) == 0 {
		t.Errorf("defaults not filled: %+v", o)
	}
}
