package noded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// ConfigFile is the name of the service's configuration file in its
// state-file directory, as upstream's `nmstatectl service` reads it.
const ConfigFile = "nmstate.conf"

// ServiceConfig is nmstate.conf: TOML, every key optional, unknown
// sections and keys ignored (upstream reads it with serde defaults).
type ServiceConfig struct {
	Service struct {
		// KeepStateFileAfterApply keeps each applied state file under its
		// name and records what was applied in a copy with the .applied
		// extension; a file is applied again when its content differs from
		// that copy. OpenShift sets it: the machine configuration owns the
		// files, and renaming them shows as drift on disk.
		KeepStateFileAfterApply bool `toml:"keep_state_file_after_apply"`
	} `toml:"service"`
}

// ReadServiceConfig reads dir's nmstate.conf; a missing file is the
// default configuration, a malformed one an error naming the file.
func ReadServiceConfig(dir string) (ServiceConfig, error) {
	var c ServiceConfig
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if _, err := toml.Decode(string(data), &c); err != nil {
		return c, fmt.Errorf("reading configuration %s: %w", path, err)
	}
	return c, nil
}
