package openshift

import (
	"os"
	"path/filepath"
	"testing"
)

func TestChoose(t *testing.T) {
	const hostFile, clusterFile = "interfaces: [{name: eth0}]\n", "interfaces: [{name: eth1}]\n"
	tests := []struct {
		name     string
		files    map[string]string
		host     string
		wantPath string
		applied  bool
	}{
		{"host file wins", map[string]string{"node1.yml": hostFile, "cluster.yml": clusterFile}, "node1", "node1.yml", false},
		{"short name", map[string]string{"node1.yml": hostFile}, "node1.lab.example", "node1.yml", false},
		{"cluster fallback", map[string]string{"node2.yml": hostFile, "cluster.yml": clusterFile}, "node1", "cluster.yml", false},
		{"empty host file falls back", map[string]string{"node1.yml": " \n", "cluster.yml": clusterFile}, "node1", "cluster.yml", false},
		{".yaml is not read", map[string]string{"node1.yaml": hostFile}, "node1", "", false},
		{"nothing", nil, "node1", "", false},
		{"applied", map[string]string{"node1.yml": hostFile, "applied": hostFile}, "node1", "node1.yml", true},
		{"applied another file", map[string]string{"node1.yml": hostFile, "applied": clusterFile}, "node1", "node1.yml", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Choose(dir, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.wantPath != "" {
				want = filepath.Join(dir, tc.wantPath)
			}
			if c.Path != want || c.Applied != tc.applied {
				t.Errorf("Choose = %q applied %v, want %q applied %v", c.Path, c.Applied, want, tc.applied)
			}
		})
	}
}

func TestRecordAppliedThenChooseSaysApplied(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yml"), []byte("interfaces: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Choose(dir, "any")
	if err != nil || c.Applied {
		t.Fatalf("Choose = %+v, %v", c, err)
	}
	if err := RecordApplied(dir, c); err != nil {
		t.Fatal(err)
	}
	again, err := Choose(dir, "any")
	if err != nil || !again.Applied {
		t.Fatalf("after RecordApplied: Choose = %+v, %v", again, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left: %v", entries)
	}
}
