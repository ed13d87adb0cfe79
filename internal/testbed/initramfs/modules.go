package initramfs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// ModuleRequest is one line of a module list: a module name and the
// parameters to load it with.
type ModuleRequest struct {
	Name   string
	Params string
}

// ParseModuleList reads a module list: one module per line, optionally
// followed by its parameters; blank lines and lines starting with # are
// ignored (the format of hack/kernel-lane/modules).
func ParseModuleList(data []byte) []ModuleRequest {
	var out []ModuleRequest
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, params, _ := strings.Cut(line, " ")
		out = append(out, ModuleRequest{Name: name, Params: strings.TrimSpace(params)})
	}
	return out
}

// Module is one module file to load, in load order.
type Module struct {
	// Name is the module's name (underscores).
	Name string
	// File is the module file of this machine (possibly compressed).
	File string
	// Params are the load parameters (only for a requested module, never
	// for one loaded as a dependency).
	Params string
}

// Base is the module's file name in a guest, uncompressed (bonding.ko).
func (m Module) Base() string {
	b := path.Base(m.File)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

// modName is the name of a module file or request: no directory, no
// extension, dashes as underscores (as the kernel names modules).
func modName(s string) string {
	s = path.Base(s)
	if i := strings.Index(s, ".ko"); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "-", "_")
}

// ResolveModules returns the modules to load for reqs, dependencies first
// and each once, from the kernel release's files below root
// (root/lib/modules/RELEASE, as depmod -b root writes them): modules.dep
// for hard dependencies, modules.softdep ("pre:" and "post:", names or
// aliases of modules.alias) as modprobe loads them. Modules built into the
// kernel (modules.builtin) need no file and are left out; a requested name
// found in neither is an error.
func ResolveModules(root, release string, reqs []ModuleRequest) ([]Module, error) {
	dir := filepath.Join(root, "lib", "modules", release)
	var idx moduleIndex
	if err := idx.read(dir); err != nil {
		return nil, fmt.Errorf("modules of %s: %w", release, err)
	}
	r := &resolver{idx: idx, dir: dir, loaded: map[string]bool{}}
	for _, req := range reqs {
		name := modName(req.Name)
		if _, ok := idx.deps[name]; !ok {
			if idx.builtin[name] {
				continue
			}
			return nil, fmt.Errorf("module %s: not found in %s", req.Name, release)
		}
		r.visit(name, req.Params)
	}
	return r.out, nil
}

// moduleIndex is what depmod wrote about a kernel's modules.
type moduleIndex struct {
	deps    map[string][]string // name -> [file, deps...] (relative to the release dir)
	builtin map[string]bool
	alias   map[string][]string // exact alias -> module names
	pre     map[string][]string // softdep pre: names or aliases
	post    map[string][]string
}

func (x *moduleIndex) read(dir string) error {
	x.deps, x.builtin, x.alias = map[string][]string{}, map[string]bool{}, map[string][]string{}
	x.pre, x.post = map[string][]string{}, map[string][]string{}
	data, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return err
	}
	for _, line := range lines(data) {
		if file, rest, ok := strings.Cut(line, ":"); ok {
			x.deps[modName(file)] = append([]string{file}, strings.Fields(rest)...)
		}
	}
	// The others are optional: an older depmod may not write them.
	if data, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range lines(data) {
			x.builtin[modName(l)] = true
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "modules.alias")); err == nil {
		for _, l := range lines(data) {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "alias" && !strings.ContainsAny(f[1], "*?[") {
				x.alias[f[1]] = append(x.alias[f[1]], modName(f[2]))
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "modules.softdep")); err == nil {
		for _, l := range lines(data) {
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != "softdep" {
				continue
			}
			name, into := modName(f[1]), x.pre
			for _, w := range f[2:] {
				switch w {
				case "pre:":
					into = x.pre
				case "post:":
					into = x.post
				default:
					into[name] = append(into[name], w)
				}
			}
		}
	}
	return nil
}

// lines returns the non-empty lines of data that are not comments.
func lines(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// resolver orders modules as modprobe --show-depends does.
type resolver struct {
	idx    moduleIndex
	dir    string
	loaded map[string]bool
	out    []Module
}

// visit adds a module after its hard dependencies and its "pre:" soft
// dependencies, and before its "post:" ones.
func (r *resolver) visit(name, params string) {
	d, ok := r.idx.deps[name]
	if !ok || r.loaded[name] {
		return
	}
	r.loaded[name] = true
	// modules.dep lists every dependency, the ones needed last first
	// (modprobe loads the list from its end).
	for i := len(d) - 1; i >= 1; i-- {
		r.visit(modName(d[i]), "")
	}
	r.soft(r.idx.pre[name])
	r.out = append(r.out, Module{Name: name, File: filepath.Join(r.dir, d[0]), Params: params})
	r.soft(r.idx.post[name])
}

// soft visits soft dependencies: module names or aliases; one that names
// nothing is skipped, as modprobe does.
func (r *resolver) soft(names []string) {
	for _, s := range names {
		if _, ok := r.idx.deps[modName(s)]; ok {
			r.visit(modName(s), "")
			continue
		}
		for _, m := range r.idx.alias[s] {
			r.visit(m, "")
		}
	}
}

// AddModules adds the modules' files, uncompressed, to dir of the archive
// (e.g. /lib/modules), and returns the load list: one line per module,
// "FILE PARAMS", in load order (the format init scripts insmod from).
func (a *Archive) AddModules(dir string, mods []Module) ([]byte, error) {
	var list bytes.Buffer
	for _, m := range mods {
		data, err := readModule(m.File)
		if err != nil {
			return nil, err
		}
		if err := a.AddBytes(path.Join(dir, m.Base()), data, 0o644); err != nil {
			return nil, err
		}
		list.WriteString(strings.TrimSpace(m.Base() + " " + m.Params))
		list.WriteByte('\n')
	}
	return list.Bytes(), nil
}

// readModule reads a module file, uncompressing .gz itself and .xz and
// .zst with the xz and zstd commands.
func readModule(file string) ([]byte, error) {
	switch {
	case strings.HasSuffix(file, ".ko"):
		return os.ReadFile(file)
	case strings.HasSuffix(file, ".ko.gz"):
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", file, err)
		}
		return io.ReadAll(z)
	case strings.HasSuffix(file, ".ko.xz"), strings.HasSuffix(file, ".ko.zst"):
		tool := "xz"
		if strings.HasSuffix(file, ".zst") {
			tool = "zstd"
		}
		out, err := exec.Command(tool, "-dc", file).Output()
		if err != nil {
			return nil, fmt.Errorf("module %s: %s -dc: %w", file, tool, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("module file %s: unknown compression", file)
}
