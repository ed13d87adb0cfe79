package benchcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadMemoryStat(t *testing.T) {
	tests := []struct {
		name, text string
		want       podMemory
	}{
		{"cgroup v1: the hierarchical totals, not the cgroup's own",
			"total_cache 1\ncache 100\nrss 7\ntotal_active_file 1024\nactive_file 1\ninactive_file 2\ntotal_cache 4096\ntotal_rss 8192\ntotal_active_file 1024\ntotal_inactive_file 3072\n",
			podMemory{Anon: 8192, ActiveFile: 1024, InactiveFile: 3072}},
		{"cgroup v2", "anon 8192\nfile 4096\nactive_file 1024\ninactive_file 3072\nanon_thp 0\n",
			podMemory{Anon: 8192, ActiveFile: 1024, InactiveFile: 3072}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "memory.stat")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readMemoryStat(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("readMemoryStat (-want +got):\n%s", d)
			}
		})
	}
}
