package noded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// AppliedExt replaces the extension of a state file once it is applied,
// as upstream's `nmstatectl service` does, so the next start does not
// apply it again.
const AppliedExt = ".applied"

// StateFiles lists the state files of dir (*.yml and *.yaml, not
// directories, not hidden) in name order.
func StateFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || strings.HasPrefix(name, ".") || (ext != ".yml" && ext != ".yaml") {
			continue
		}
		out = append(out, filepath.Join(dir, name))
	}
	slices.Sort(out)
	return out, nil
}

// AppliedName is the name a state file gets once applied: its extension
// replaced by AppliedExt.
func AppliedName(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + AppliedExt
}

// ApplyFileFunc applies the desired state read from one file.
type ApplyFileFunc func(ctx context.Context, path string, desired *nmstate.State) error

// FileResult is the outcome of one state file.
type FileResult struct {
	File string
	// Applied is the new name of the file after a successful apply.
	Applied string
	Err     error
}

// ApplyDir applies the state files of dir one by one in name order. By
// default each applied file is renamed to its AppliedName, so it is not
// applied again; with keep (nmstate.conf's keep_state_file_after_apply)
// the file keeps its name, its content is copied to its AppliedName, and
// a file whose AppliedName holds the same content is skipped (applied
// already). A file that fails to decode or apply keeps its name and does
// not stop the others (upstream logs and goes on); its error is in its
// result. ctx ending stops before the next file.
func ApplyDir(ctx context.Context, dir string, keep bool, applyFile ApplyFileFunc) ([]FileResult, error) {
	files, err := StateFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []FileResult
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		data, err := os.ReadFile(f)
		if err != nil {
			out = append(out, FileResult{File: f, Err: err})
			continue
		}
		if keep {
			if applied, err := os.ReadFile(AppliedName(f)); err == nil && string(applied) == string(data) {
				continue
			}
		}
		res := FileResult{File: f}
		res.Err = applyOne(ctx, f, data, applyFile)
		if res.Err == nil {
			res.Applied = AppliedName(f)
			if keep {
				err = os.WriteFile(res.Applied, data, 0o644)
			} else {
				err = os.Rename(f, res.Applied)
			}
			if err != nil {
				res.Applied, res.Err = "", fmt.Errorf("%s: applied, but recording it in %s: %w", f, AppliedName(f), err)
			}
		}
		out = append(out, res)
	}
	return out, nil
}

func applyOne(ctx context.Context, path string, data []byte, applyFile ApplyFileFunc) error {
	st, err := nmstate.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := applyFile(ctx, path, st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
