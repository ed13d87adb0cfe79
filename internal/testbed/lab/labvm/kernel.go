package labvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Kernel is one kernel of the kernel lane's cache: an entry
// CACHE/kernel/<package>_<version>/ as hack/kernel-lane writes it.
type Kernel struct {
	// Dir is the cache entry.
	Dir string
	// Release is the kernel's release (uname -r), from Dir/kver.
	Release string
	// Image is what qemu boots: the uncompressed vmlinux (PVH entry, no
	// decompression in the guest) when the cache has it, else vmlinuz.
	Image string
	// ModulesRoot holds lib/modules/RELEASE with depmod's files.
	ModulesRoot string
}

// FindKernel returns the kernel of the lane's cache dir (the newest
// entry, should there be several).
func FindKernel(cache string) (Kernel, error) {
	ents, err := os.ReadDir(filepath.Join(cache, "kernel"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			dirs = append(dirs, filepath.Join(cache, "kernel", e.Name()))
		}
	}
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		k, err := kernelIn(dirs[i])
		if err == nil {
			return k, nil
		}
	}
	return Kernel{}, fmt.Errorf("no kernel in %s: run hack/kernel-lane/kernel.sh (or make test-kernel) to fetch Debian's", filepath.Join(cache, "kernel"))
}

func kernelIn(dir string) (Kernel, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kver"))
	if err != nil {
		return Kernel{}, err
	}
	k := Kernel{Dir: dir, Release: strings.TrimSpace(string(b)), ModulesRoot: filepath.Join(dir, "root")}
	for _, img := range []string{"vmlinux", "vmlinuz"} {
		if _, err := os.Stat(filepath.Join(dir, img)); err == nil {
			k.Image = filepath.Join(dir, img)
			break
		}
	}
	if k.Image == "" {
		return Kernel{}, fmt.Errorf("%s has no vmlinux or vmlinuz", dir)
	}
	if _, err := os.Stat(filepath.Join(k.ModulesRoot, "lib", "modules", k.Release, "modules.dep")); err != nil {
		return Kernel{}, fmt.Errorf("%s: modules: %w", dir, err)
	}
	return k, nil
}
