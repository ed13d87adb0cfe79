package noded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func TestAppliedName(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/nmstate/01-eth1.yml": "/etc/nmstate/01-eth1.applied",
		"/etc/nmstate/02-br.yaml":  "/etc/nmstate/02-br.applied",
		"/etc/nmstate/a.b.yml":     "/etc/nmstate/a.b.applied",
	} {
		if got := AppliedName(in); got != want {
			t.Errorf("AppliedName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApplyDirOrderRenameAndFailures(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"20-second.yml":  "interfaces:\n- name: eth2\n  state: up\n",
		"10-first.yaml":  "interfaces:\n- name: eth1\n  state: up\n",
		"15-bad.yml":     "interfaces:\n- name: eth9\n  state: sideways\n",
		"30-fails.yml":   "interfaces:\n- name: fail0\n  state: up\n",
		"40-last.yml":    "interfaces:\n- name: eth4\n  state: up\n",
		"05-old.applied": "interfaces: []\n",
		"notes.txt":      "not a state\n",
		".hidden.yml":    "interfaces: []\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	fake := func(_ context.Context, path string, st *nmstate.State) error {
		order = append(order, st.Interfaces[0].Name)
		if st.Interfaces[0].Name == "fail0" {
			return errors.New("apply failed")
		}
		return nil
	}
	res, err := ApplyDir(context.Background(), dir, false, fake)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"eth1", "eth2", "fail0", "eth4"}, order); diff != "" {
		t.Errorf("apply order (-want +got):\n%s", diff)
	}
	type outcome struct {
		File, Applied string
		Failed        bool
	}
	var got []outcome
	for _, r := range res {
		got = append(got, outcome{filepath.Base(r.File), filepath.Base(r.Applied), r.Err != nil})
	}
	want := []outcome{
		{"10-first.yaml", "10-first.applied", false},
		{"15-bad.yml", ".", true},
		{"20-second.yml", "20-second.applied", false},
		{"30-fails.yml", ".", true},
		{"40-last.yml", "40-last.applied", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "15-bad.yml") || !strings.Contains(res[1].Err.Error(), "sideways") {
		t.Errorf("decode error %v does not name the file and the bad value", res[1].Err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	wantNames := []string{".hidden.yml", "05-old.applied", "10-first.applied", "15-bad.yml", "20-second.applied",
		"30-fails.yml", "40-last.applied", "notes.txt"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("directory after service (-want +got):\n%s", diff)
	}
	// A second start applies only what was not applied.
	order = nil
	if _, err := ApplyDir(context.Background(), dir, false, fake); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"fail0"}, order); diff != "" {
		t.Errorf("second start: applied (-want +got):\n%s", diff)
	}
}

// TestApplyDirKeepStateFile is nmstate.conf's keep_state_file_after_apply:
// files keep their names, .applied copies record what was applied, and
// only new or changed files are applied again.
func TestApplyDirKeepStateFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eth1 := "interfaces:\n- name: eth1\n  state: up\n"
	write("01-eth1.yml", eth1)
	write("02-eth2.yml", "interfaces:\n- name: eth2\n  state: up\n")
	write("03-fails.yml", "interfaces:\n- name: fail0\n  state: up\n")
	var order []string
	fake := func(_ context.Context, _ string, st *nmstate.State) error {
		order = append(order, st.Interfaces[0].Name)
		if st.Interfaces[0].Name == "fail0" {
			return errors.New("apply failed")
		}
		return nil
	}
	run := func() []string {
		t.Helper()
		order = nil
		if _, err := ApplyDir(context.Background(), dir, true, fake); err != nil {
			t.Fatal(err)
		}
		return order
	}
	if diff := cmp.Diff([]string{"eth1", "eth2", "fail0"}, run()); diff != "" {
		t.Errorf("first start (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"01-eth1.yml": eth1, "01-eth1.applied": eth1} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "03-fails.applied")); err == nil {
		t.Error("a failed file got an .applied copy")
	}
	if diff := cmp.Diff([]string{"fail0"}, run()); diff != "" {
		t.Errorf("second start, nothing changed (-want +got):\n%s", diff)
	}
	write("02-eth2.yml", "interfaces:\n- name: eth2\n  state: up\n  mtu: 1400\n")
	if diff := cmp.Diff([]string{"eth2", "fail0"}, run()); diff != "" {
		t.Errorf("third start, 02-eth2.yml changed (-want +got):\n%s", diff)
	}
}

func TestReadServiceConfig(t *testing.T) {
	tests := []struct {
		name, conf string
		keep       bool
		wantErr    string
	}{
		{name: "no file"},
		{name: "keep", conf: "[service]\nkeep_state_file_after_apply = true\n", keep: true},
		{name: "off, with comments and unknown keys", conf: "# OpenShift\n[service]\nkeep_state_file_after_apply = false\nfuture = 1\n[other]\nx = \"y\"\n"},
		{name: "not TOML", conf: "[service\n", wantErr: "nmstate.conf"},
		{name: "wrong type", conf: "[service]\nkeep_state_file_after_apply = \"yes\"\n", wantErr: "keep_state_file_after_apply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.conf != "" {
				if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(tc.conf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := ReadServiceConfig(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Service.KeepStateFileAfterApply != tc.keep {
				t.Errorf("keep = %v, want %v", c.Service.KeepStateFileAfterApply, tc.keep)
			}
		})
	}
}
