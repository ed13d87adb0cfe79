package initramfs

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// DefaultLibraryDirs are where the dynamic loader of a Debian amd64 system
// looks for libraries without an ld.so.cache entry, in its order.
var DefaultLibraryDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// Dependencies returns what the ELF program at prog needs to run: its
// interpreter (PT_INTERP) and every shared library it loads (DT_NEEDED,
// transitively), as absolute paths of this machine, interpreter first,
// each once. dirs are searched for libraries after the object's own
// DT_RUNPATH/DT_RPATH ($ORIGIN expanded); nil means DefaultLibraryDirs.
// A static program has none.
func Dependencies(prog string, dirs []string) ([]string, error) {
	if dirs == nil {
		dirs = DefaultLibraryDirs
	}
	var out []string
	seen := map[string]bool{}
	interp, err := interpreter(prog)
	if err != nil {
		return nil, err
	}
	if interp != "" {
		out = append(out, interp)
		seen[path.Base(interp)] = true
	}
	queue := []string{prog}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, search, err := dynamic(obj)
		if err != nil {
			return nil, err
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			p, err := findLibrary(lib, append(search, dirs...))
			if err != nil {
				return nil, fmt.Errorf("%s (needed by %s): %w", lib, obj, err)
			}
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out, nil
}

// interpreter returns the program's PT_INTERP, "" for a static program.
func interpreter(prog string) (string, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", prog, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading %s's interpreter: %w", prog, err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// dynamic returns an object's DT_NEEDED entries and its own search path
// (DT_RUNPATH, else DT_RPATH, $ORIGIN expanded).
func dynamic(obj string) (needed, search []string, err error) {
	f, err := elf.Open(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", obj, err)
	}
	defer f.Close()
	if f.Section(".dynamic") == nil {
		return nil, nil, nil // static
	}
	if needed, err = f.DynString(elf.DT_NEEDED); err != nil {
		return nil, nil, fmt.Errorf("reading %s's DT_NEEDED: %w", obj, err)
	}
	paths, err := f.DynString(elf.DT_RUNPATH)
	if err == nil && len(paths) == 0 {
		paths, err = f.DynString(elf.DT_RPATH)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s's run path: %w", obj, err)
	}
	for _, p := range paths {
		for _, d := range strings.Split(p, ":") {
			if d == "" {
				continue
			}
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", path.Dir(obj)), "$ORIGIN", path.Dir(obj))
			search = append(search, d)
		}
	}
	return needed, search, nil
}

// findLibrary finds a DT_NEEDED name (a path when it has a slash) in dirs.
func findLibrary(name string, dirs []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range dirs {
		p := path.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("not found in " + strings.Join(dirs, ":"))
}

// AddProgram adds the ELF program at the absolute path prog of this
// machine at the same path, with its interpreter and libraries
// (Dependencies with DefaultLibraryDirs), each by AddHostPath.
func (a *Archive) AddProgram(prog string) error {
	deps, err := Dependencies(prog, nil)
	if err != nil {
		return fmt.Errorf("adding %s: %w", prog, err)
	}
	for _, p := range append([]string{prog}, deps...) {
		if err := a.AddHostPath(p); err != nil {
			return err
		}
	}
	return nil
}
