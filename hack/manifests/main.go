// Command manifests writes the YAML files of deploy/ that internal/manifest
// is the source of (`go run ./hack/manifests` from the repository root).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/knmstate/knmstate/internal/manifest"
)

func main() {
	files, err := manifest.Files()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, files[p], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", p)
	}
}
