package openshift

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteManifests writes Render's output into dir (created if needed).
func WriteManifests(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifests directory: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("writing manifest: %w", err)
		}
	}
	return nil
}
