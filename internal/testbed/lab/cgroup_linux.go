package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupHierarchy is one mounted cgroup hierarchy: a v1 controller set or
// the v2 (unified) tree.
type cgroupHierarchy struct {
	// Mount is the hierarchy's mount point, e.g. /sys/fs/cgroup/memory.
	Mount string
	// Controllers are the v1 controllers (or name=...), nil for v2.
	Controllers []string
	// Root is the hierarchy's root as seen in mountinfo (usually "/").
	Root string
}

// rel turns a cgroup path into one below the mount point: a hierarchy
// mounted from below its root (a container without a cgroup namespace
// sees /docker/ID as its mount's root) holds that prefix already.
func (h cgroupHierarchy) rel(dir string) string {
	if h.Root != "/" && (dir == h.Root || strings.HasPrefix(dir, h.Root+"/")) {
		return strings.TrimPrefix(dir, h.Root)
	}
	return dir
}

// cgroupHierarchies lists the cgroup hierarchies mounted in this process's
// mount namespace.
func cgroupHierarchies() ([]cgroupHierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []cgroupHierarchy
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		h := cgroupHierarchy{Mount: unescapeMountPath(fields[4]), Root: fields[3]}
		switch fields[sep+1] {
		case "cgroup2":
		case "cgroup":
			for _, o := range strings.Split(fields[sep+3], ",") {
				if o == "rw" || o == "ro" || strings.HasPrefix(o, "release_agent=") || o == "xattr" || o == "noprefix" || o == "clone_children" || o == "cpuset_v2_mode" {
					continue
				}
				h.Controllers = append(h.Controllers, o)
			}
		default:
			continue
		}
		out = append(out, h)
	}
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes.
func unescapeMountPath(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// memoryCgroup returns this process's cgroup path in the memory controller
// (v1) or the unified tree (v2): where the lab nests its nodes, so their
// pods are accounted to whatever started the lab.
func memoryCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("reading cgroups: %w", err)
	}
	v2 := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2], nil
		}
	}
	if v2 == "" {
		return "", errors.New("no memory cgroup found in /proc/self/cgroup")
	}
	return v2, nil
}

// nodeCgroupRoot is the kubelet's cgroupRoot for one node of a lab: below
// the lab's own memory cgroup, the same path in every hierarchy (the
// kubelet's cgroupfs driver uses one path for all controllers).
func nodeCgroupRoot(base, lab, node string) string {
	return path.Join(base, "knmstate-lab", lab, node)
}

// createCgroup creates dir (a cgroup path) in every hierarchy, parents
// included, and returns the directories it made, deepest last. In the v1
// cpuset hierarchy each new directory gets its parent's cpus and mems,
// without which no task could join it.
func createCgroup(hs []cgroupHierarchy, dir string) ([]string, error) {
	var made []string
	for _, h := range hs {
		cur := h.Mount
		for _, part := range strings.Split(strings.Trim(h.rel(dir), "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			err := os.Mkdir(cur, 0o755)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return made, fmt.Errorf("creating cgroup %s: %w", cur, err)
			}
			made = append(made, cur)
			if slices.Contains(h.Controllers, "cpuset") {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					b, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return made, fmt.Errorf("cgroup %s: %w", parent, err)
					}
					if err := os.WriteFile(filepath.Join(cur, f), b, 0); err != nil {
						return made, fmt.Errorf("cgroup %s: %w", cur, err)
					}
				}
			}
		}
	}
	return made, nil
}

// removeCgroupTree removes dir and every cgroup below it in every
// hierarchy, deepest first. Tasks still inside make it fail (EBUSY): the
// caller ends them first.
func removeCgroupTree(hs []cgroupHierarchy, dir string) error {
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h.Mount, h.rel(dir))
		var dirs []string
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir
				}
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeEmptyCgroups removes the given directories, deepest first, where
// they are empty (other labs may share a parent).
func removeEmptyCgroups(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = unix.Rmdir(dirs[i])
	}
}

// labCgroups finds the cgroups of the lab named name in every hierarchy,
// wherever the lab nested them (below the memory cgroup of whatever
// started it): directories knmstate-lab/NAME.
func labCgroups(hs []cgroupHierarchy, name string) []string {
	var out []string
	for _, h := range hs {
		_ = filepath.WalkDir(h.Mount, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Count(strings.TrimPrefix(p, h.Mount), "/") > 8 {
				return fs.SkipDir
			}
			if d.Name() != "knmstate-lab" {
				return nil
			}
			if st, err := os.Stat(filepath.Join(p, name)); err == nil && st.IsDir() {
				out = append(out, filepath.Join(p, name))
			}
			return fs.SkipDir
		})
	}
	return out
}

// removeLabCgroups removes every cgroup of the lab named name (after its
// processes are gone).
func removeLabCgroups(name string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range labCgroups(hs, name) {
		for _, h := range hs {
			if strings.HasPrefix(dir, h.Mount+"/") {
				if err := removeCgroupTree([]cgroupHierarchy{{Mount: h.Mount, Root: "/"}}, strings.TrimPrefix(dir, h.Mount)); err != nil {
					errs = append(errs, err)
				}
				// The lab's parent knmstate-lab, if no other lab uses it.
				_ = unix.Rmdir(filepath.Dir(dir))
			}
		}
	}
	return errors.Join(errs...)
}
