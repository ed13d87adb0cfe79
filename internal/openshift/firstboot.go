package openshift

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Choice is the file a host applies at boot.
type Choice struct {
	// Path is the chosen file; "" when the host has none (nothing to do).
	Path string
	Data []byte
	// SHA256 of Data, hex.
	SHA256 string
	// Applied reports that the applied record holds this very file: it
	// was applied at an earlier boot and nothing is to be done.
	Applied bool
}

// ShortHostname is what `hostname -s` prints: the name up to the first
// dot.
func ShortHostname(name string) string {
	short, _, _ := strings.Cut(name, ".")
	return short
}

// Choose picks the file host applies from dir: <host>.yml when it exists
// and is not empty, else cluster.yml when it is not empty, else none
// (as OpenShift's nmstate-configuration picks). A file this boot already
// applied is reported as Applied.
func Choose(dir, host string) (*Choice, error) {
	if host == "" {
		return nil, errors.New("no host name to choose a file by")
	}
	for _, name := range []string{ShortHostname(host) + ".yml", ClusterFileHost + ".yml"} {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		sum := sha256.Sum256(data)
		c := &Choice{Path: p, Data: data, SHA256: hex.EncodeToString(sum[:])}
		prev, err := os.ReadFile(filepath.Join(dir, filepath.Base(AppliedFile)))
		switch {
		case err == nil:
			ps := sha256.Sum256(prev)
			c.Applied = ps == sum
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading the applied record: %w", err)
		}
		return c, nil
	}
	return &Choice{}, nil
}

// RecordApplied writes the applied record: a copy of the file applied
// (its sha256 is what later boots compare), written atomically. Its
// presence is also configure-ovs's signal to leave br-ex alone, so it
// is written only after a successful apply.
func RecordApplied(dir string, c *Choice) error {
	dst := filepath.Join(dir, filepath.Base(AppliedFile))
	tmp, err := os.CreateTemp(dir, ".applied-*")
	if err != nil {
		return fmt.Errorf("recording the applied file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(c.Data); err != nil {
		tmp.Close()
		return fmt.Errorf("recording the applied file: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("recording the applied file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("recording the applied file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("recording the applied file: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("recording the applied file: %w", err)
	}
	return nil
}
