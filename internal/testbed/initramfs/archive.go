package initramfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxLinks bounds the symlinks followed while resolving one path.
const maxLinks = 40

// entry is one member of the archive.
type entry struct {
	mode   uint32 // type and permission bits
	src    string // file: copied from this path of this machine
	data   []byte // file: these bytes, when src is ""
	target string // symlink
}

// Archive is an initramfs under construction: paths in the guest (absolute,
// clean) to entries. Parent directories are created as needed.
type Archive struct {
	entries map[string]*entry
}

// New returns an empty archive.
func New() *Archive { return &Archive{entries: map[string]*entry{"/": {mode: modeDir | 0o755}}} }

// clean checks and cleans a guest path.
func clean(p string) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	return path.Clean(p), nil
}

// resolveParent follows the archive's own symlinks in p's parent
// directories, so a file added below /lib lands below usr/lib when /lib
// is a symlink to usr/lib, as it would on this machine.
func (a *Archive) resolveParent(p string) (string, error) {
	links := 0
	for {
		dir, base := path.Split(p)
		dir = path.Clean(dir)
		if dir == "/" {
			return p, nil
		}
		parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
		cur := "/"
		moved := false
		for i, part := range parts {
			next := path.Join(cur, part)
			e := a.entries[next]
			if e == nil || e.mode&0o170000 != modeSymlink {
				cur = next
				continue
			}
			if links++; links > maxLinks {
				return "", fmt.Errorf("%s: too many levels of symbolic links", p)
			}
			t := e.target
			if !path.IsAbs(t) {
				t = path.Join(cur, t)
			}
			p = path.Join(append([]string{t}, append(parts[i+1:], base)...)...)
			moved = true
			break
		}
		if !moved {
			return p, nil
		}
	}
}

// mkdirs creates dir and its parents as directories (0755).
func (a *Archive) mkdirs(dir string) error {
	if dir == "/" {
		return nil
	}
	if e := a.entries[dir]; e != nil {
		if e.mode&0o170000 != modeDir {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if err := a.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	a.entries[dir] = &entry{mode: modeDir | 0o755}
	return nil
}

// put adds e at p (parents resolved and created). Adding the same thing
// twice is fine; adding something else where an entry exists is an error.
func (a *Archive) put(p string, e *entry) error {
	p, err := clean(p)
	if err != nil {
		return err
	}
	if p, err = a.resolveParent(p); err != nil {
		return err
	}
	if err := a.mkdirs(path.Dir(p)); err != nil {
		return fmt.Errorf("adding %s: %w", p, err)
	}
	if old := a.entries[p]; old != nil {
		if old.mode == e.mode && old.src == e.src && string(old.data) == string(e.data) && old.target == e.target {
			return nil
		}
		if old.mode&0o170000 == modeDir && e.mode&0o170000 == modeDir {
			old.mode = e.mode
			return nil
		}
		return fmt.Errorf("adding %s: a different entry exists there", p)
	}
	a.entries[p] = e
	return nil
}

// AddDir adds a directory with the permission bits of perm.
func (a *Archive) AddDir(p string, perm fs.FileMode) error {
	return a.put(p, &entry{mode: modeDir | uint32(perm.Perm())})
}

// AddBytes adds a file holding data.
func (a *Archive) AddBytes(p string, data []byte, perm fs.FileMode) error {
	return a.put(p, &entry{mode: modeFile | uint32(perm.Perm()), data: data})
}

// AddSymlink adds a symlink to target.
func (a *Archive) AddSymlink(p, target string) error {
	return a.put(p, &entry{mode: modeSymlink | 0o777, target: target})
}

// AddFile adds the regular file src of this machine (symlinks followed) at
// p, with src's permission bits. It is read when the archive is written.
func (a *Archive) AddFile(p, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("adding %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("adding %s: %s is not a regular file", p, src)
	}
	return a.put(p, &entry{mode: modeFile | uint32(fi.Mode().Perm()), src: src})
}

// AddHostPath adds the file at the absolute path p of this machine at the
// same path in the archive, with every symlink met on the way (in any
// component) added as a symlink, so the guest resolves p as this machine
// does: /lib64/ld-linux-x86-64.so.2 brings the /lib64 -> usr/lib64 link,
// the link inside usr/lib64 and the file it ends at.
func (a *Archive) AddHostPath(p string) error {
	p, err := clean(p)
	if err != nil {
		return err
	}
	for links := 0; ; {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur := "/"
		var linked bool
		for i, part := range parts {
			next := path.Join(cur, part)
			fi, err := os.Lstat(next)
			if err != nil {
				return fmt.Errorf("adding %s: %w", p, err)
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				cur = next
				continue
			}
			if links++; links > maxLinks {
				return fmt.Errorf("adding %s: too many levels of symbolic links", p)
			}
			t, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("adding %s: %w", p, err)
			}
			if err := a.AddSymlink(next, t); err != nil {
				return err
			}
			if !path.IsAbs(t) {
				t = path.Join(cur, t)
			}
			p = path.Join(append([]string{t}, parts[i+1:]...)...)
			linked = true
			break
		}
		if !linked {
			return a.AddFile(p, p)
		}
	}
}

// AddTree adds the directory src of this machine and everything below it
// at p (regular files, directories and symlinks as they are).
func (a *Archive) AddTree(p, src string) error {
	return filepath.WalkDir(src, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, file)
		if err != nil {
			return err
		}
		dst := path.Join(p, filepath.ToSlash(rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(file)
			if err != nil {
				return err
			}
			return a.AddSymlink(dst, t)
		case d.IsDir():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return a.AddDir(dst, fi.Mode())
		case d.Type().IsRegular():
			return a.AddFile(dst, file)
		}
		return nil // sockets, devices: not for an initramfs
	})
}

// Paths lists the archive's paths, sorted.
func (a *Archive) Paths() []string {
	out := make([]string, 0, len(a.entries))
	for p := range a.entries {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// WriteTo writes the archive as a newc cpio: sorted paths (so parents come
// first), owner root, time 0.
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	c := &cpioWriter{w: w}
	for _, p := range a.Paths() {
		e := a.entries[p]
		name := strings.TrimPrefix(p, "/")
		if name == "" {
			name = "."
		}
		switch e.mode & 0o170000 {
		case modeDir:
			c.header(name, e.mode, 0)
		case modeSymlink:
			c.header(name, e.mode, int64(len(e.target)))
			c.write([]byte(e.target))
			c.pad()
		case modeFile:
			if e.src == "" {
				c.header(name, e.mode, int64(len(e.data)))
				c.write(e.data)
				c.pad()
				break
			}
			if err := c.copyFile(name, e); err != nil {
				return c.n, err
			}
		}
		if c.err != nil {
			return c.n, c.err
		}
	}
	err := c.close()
	return c.n, err
}

// copyFile writes a file entry whose data comes from this machine.
func (c *cpioWriter) copyFile(name string, e *entry) error {
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	c.header(name, e.mode, fi.Size())
	if c.err != nil {
		return c.err
	}
	n, err := io.Copy(c.w, io.LimitReader(f, fi.Size()))
	c.n += n
	if err == nil && n != fi.Size() {
		err = errors.New("file shrank while being copied")
	}
	if err != nil {
		return fmt.Errorf("initramfs: copying %s: %w", e.src, err)
	}
	c.pad()
	return c.err
}

// WriteFile writes the archive to the file at p (mode 0600), atomically.
func (a *Archive) WriteFile(p string) error {
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if _, err := a.WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("initramfs: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	return nil
}
