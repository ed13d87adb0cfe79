package nodeinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Spec is what one node's init does: mounts, then daemons in order.
type Spec struct {
	// Mounts are made first, in order, inside the node's mount namespace.
	Mounts []Mount `json:"mounts,omitempty"`
	// Daemons are started in order; each one after the previous one is
	// ready (Daemon.Ready).
	Daemons []Daemon `json:"daemons"`
	// StatusFile, when set, is rewritten (atomically) with the daemons'
	// PIDs, restarts and last exits whenever they change.
	StatusFile string `json:"statusFile,omitempty"`
	// StopGrace is how long daemons get between SIGTERM and SIGKILL when
	// the init stops; default 10s.
	StopGrace Duration `json:"stopGrace,omitempty"`
}

// Mount is one mount: a tmpfs (Type "tmpfs"), the init's PID namespace's
// procfs (Type "proc"), or a bind mount of Source (Type ""), optionally
// read-only. A bind mount's target may be a file.
type Mount struct {
	Source   string `json:"source,omitempty"`
	Target   string `json:"target"`
	Type     string `json:"type,omitempty"`
	Data     string `json:"data,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Daemon is one long-running process of the node.
type Daemon struct {
	Name string   `json:"name"`
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	// Env is the whole environment (KEY=VALUE); the init's own is not
	// passed on.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory; default /.
	Dir string `json:"dir,omitempty"`
	// Log receives standard output and error (appended).
	Log string `json:"log"`
	// Ready, when set, is a path (a socket, a file) whose existence means
	// the daemon serves; the next daemon starts only then.
	Ready string `json:"ready,omitempty"`
	// ReadyTimeout bounds the wait for Ready; default 60s.
	ReadyTimeout Duration `json:"readyTimeout,omitempty"`
	// PrivateMounts starts the daemon in a mount namespace of its own,
	// copied from the node's with every mount private: what it mounts
	// stays its own, and the node's later mounts (containers') do not
	// reach it (NetworkManager's sysfs).
	PrivateMounts bool `json:"privateMounts,omitempty"`
}

// Duration is a time.Duration written as a string ("10s") in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks a spec and names the first field that is wrong.
func (s *Spec) Validate() error {
	var errs []error
	for i, m := range s.Mounts {
		switch {
		case !filepath.IsAbs(m.Target):
			errs = append(errs, fmt.Errorf("mounts[%d].target: %q is not an absolute path", i, m.Target))
		case m.Type == "" && !filepath.IsAbs(m.Source):
			errs = append(errs, fmt.Errorf("mounts[%d].source: a bind mount needs an absolute source, got %q", i, m.Source))
		case m.Type != "" && m.Type != "tmpfs" && m.Type != "proc":
			errs = append(errs, fmt.Errorf("mounts[%d].type: %q is not supported (tmpfs, proc, or empty for a bind mount)", i, m.Type))
		}
	}
	if len(s.Daemons) == 0 {
		errs = append(errs, errors.New("daemons: none given"))
	}
	names := map[string]bool{}
	for i, d := range s.Daemons {
		switch {
		case d.Name == "":
			errs = append(errs, fmt.Errorf("daemons[%d].name: empty", i))
		case names[d.Name]:
			errs = append(errs, fmt.Errorf("daemons[%d].name: %q is given twice", i, d.Name))
		case !filepath.IsAbs(d.Path):
			errs = append(errs, fmt.Errorf("daemons[%d].path: %q is not an absolute path", i, d.Path))
		case d.Log == "":
			errs = append(errs, fmt.Errorf("daemons[%d].log: empty", i))
		}
		names[d.Name] = true
	}
	return errors.Join(errs...)
}

// ReadSpec reads and validates a spec file.
func ReadSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node init spec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("node init spec %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("node init spec %s: %w", path, err)
	}
	return &s, nil
}

// WriteSpec writes a spec file (atomically).
func WriteSpec(path string, s *Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

// Status is what the init reports in Spec.StatusFile.
type Status struct {
	InitPID int            `json:"initPID"`
	Phase   string         `json:"phase"`
	Daemons []DaemonStatus `json:"daemons"`
}

// DaemonStatus is one daemon's state.
type DaemonStatus struct {
	Name     string `json:"name"`
	PID      int    `json:"pid,omitempty"`
	Restarts int    `json:"restarts"`
	LastExit string `json:"lastExit,omitempty"`
}

// ReadStatus reads a status file.
func ReadStatus(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("node init status %s: %w", path, err)
	}
	return &s, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
