package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files in the state directory.
const (
	recordFile = "checkpoint.json"
	lockFile   = "lock"
)

// ErrCheckpointExists is returned by Apply while another checkpoint is
// pending (nmstate: "another checkpoint exists"): commit or roll it back,
// or wait for its deadline.
var ErrCheckpointExists = errors.New("another checkpoint exists")

// ErrNoCheckpoint is returned by Commit and Rollback when nothing is
// pending.
var ErrNoCheckpoint = errors.New("no checkpoint is pending")

// ErrBusy is returned by Apply when another apply, commit or rollback holds
// the state directory.
var ErrBusy = errors.New("another apply, commit or rollback is in progress")

// ReadCheckpoint returns the pending checkpoint record of stateDir, or
// ErrNoCheckpoint.
func ReadCheckpoint(stateDir string) (*Checkpoint, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCheckpoint
	}
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("reading checkpoint %s: %w", filepath.Join(stateDir, recordFile), err)
	}
	return &c, nil
}

// writeCheckpoint stores rec atomically: a crash leaves either no record or
// the whole record, never a torn one (temp file, fsync, rename, fsync of
// the directory).
func writeCheckpoint(stateDir string, rec *Checkpoint) error {
	return writeEncodedCheckpoint(stateDir, rec, rec.startEncoding(true, nil))
}

// writeEncodedCheckpoint is writeCheckpoint for a record whose states are
// being encoded by enc (started with check). The check of the states runs
// while the temporary file is written and synced; the record is renamed
// into place only after every check passed. Whatever the outcome, no
// goroutine of enc reads rec's states once it returns.
func writeEncodedCheckpoint(stateDir string, rec *Checkpoint, enc *recordEncoding) error {
	defer enc.wait()
	// A record that cannot be read back can neither be rolled back nor
	// committed: the encoding decodes its states again and refuses, so the
	// apply does not start. A failed check wins over a failed write, as
	// nothing would have been written without it.
	data, err := enc.assemble(rec)
	if err != nil {
		return err
	}
	enc.startChecks()
	tmp, err := writeTemp(stateDir, rec.ID, data)
	if tmp != "" {
		defer os.Remove(tmp) // no-op after the rename
	}
	if cerr := enc.checkErr(rec.ID); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(stateDir, recordFile)); err != nil {
		return fmt.Errorf("storing checkpoint %s: %w", rec.ID, err)
	}
	return syncDir(stateDir)
}

// writeTemp writes data to a new temporary file next to the record and
// syncs it; it returns the file's name whenever the file was created.
func writeTemp(stateDir, id string, data []byte) (string, error) {
	f, err := os.CreateTemp(stateDir, recordFile+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing checkpoint %s: %w", id, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return f.Name(), fmt.Errorf("writing checkpoint %s: %w", id, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return f.Name(), fmt.Errorf("syncing checkpoint %s: %w", id, err)
	}
	if err := f.Close(); err != nil {
		return f.Name(), fmt.Errorf("writing checkpoint %s: %w", id, err)
	}
	return f.Name(), nil
}

// removeCheckpoint deletes the record durably.
func removeCheckpoint(stateDir string) error {
	if err := os.Remove(filepath.Join(stateDir, recordFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing checkpoint: %w", err)
	}
	return syncDir(stateDir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// lockDir takes the state directory's lock. With wait it retries until ctx
// ends; without, a held lock is ErrBusy at once. The lock dies with the
// process, so a crashed apply never blocks the watchdog.
func lockDir(ctx context.Context, stateDir string, wait bool) (unlock func(), err error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	// os.OpenFile sets O_CLOEXEC: a watchdog started while the lock is held
	// must not inherit (and so keep) it.
	f, err := os.OpenFile(filepath.Join(stateDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	if err := flock(ctx, f, wait); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
