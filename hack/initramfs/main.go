// Command initramfs writes the kernel lane's initramfs (hack/kernel-lane/
// run.sh) with the same builder as the lab's guest mode
// (internal/testbed/initramfs): files of this machine at their own paths with
// their symlinks, a staged directory tree, and kernel modules resolved with
// their dependencies from the kernel's modules.dep, uncompressed, plus
// their load list.
//
//	go run ./hack/initramfs -out FILE -kernel-dir DIR -modules LIST \
//	    -host-path /bin/busybox -tree STAGED_ROOT
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/knmstate/knmstate/internal/testbed/initramfs"
)

// paths is a repeatable flag.
type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var (
		out, kernelDir, modules, moduleDir, moduleList string
		hostPaths, trees, programs                     paths
	)
	flag.StringVar(&out, "out", "", "the initramfs to write (newc cpio)")
	flag.StringVar(&kernelDir, "kernel-dir", "", "the kernel lane's cache entry (kver, root/lib/modules/KVER)")
	flag.StringVar(&modules, "modules", "", "module list (one module and its parameters per line)")
	flag.StringVar(&moduleDir, "module-dir", "/lib/modules", "where the modules go in the initramfs")
	flag.StringVar(&moduleList, "module-list", "/etc/lane/modules", "where their load list goes in the initramfs")
	flag.Var(&hostPaths, "host-path", "a file of this machine, added at its own path with the symlinks on the way (repeatable)")
	flag.Var(&trees, "tree", "a directory whose contents are added at / (repeatable)")
	flag.Var(&programs, "program", "an ELF program of this machine, added at its own path with its interpreter and shared libraries (repeatable)")
	flag.Parse()
	if err := run(out, kernelDir, modules, moduleDir, moduleList, hostPaths, trees, programs); err != nil {
		fmt.Fprintln(os.Stderr, "initramfs:", err)
		os.Exit(1)
	}
}

func run(out, kernelDir, modules, moduleDir, moduleList string, hostPaths, trees, programs []string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	a := initramfs.New()
	for _, p := range hostPaths {
		if err := a.AddHostPath(p); err != nil {
			return err
		}
	}
	for _, p := range programs {
		if err := a.AddProgram(p); err != nil {
			return err
		}
	}
	for _, t := range trees {
		if err := a.AddTree("/", t); err != nil {
			return err
		}
	}
	if modules != "" {
		list, err := os.ReadFile(modules)
		if err != nil {
			return err
		}
		kver, err := os.ReadFile(filepath.Join(kernelDir, "kver"))
		if err != nil {
			return fmt.Errorf("kernel: %w", err)
		}
		mods, err := initramfs.ResolveModules(filepath.Join(kernelDir, "root"), strings.TrimSpace(string(kver)), initramfs.ParseModuleList(list))
		if err != nil {
			return err
		}
		load, err := a.AddModules(moduleDir, mods)
		if err != nil {
			return err
		}
		if err := a.AddBytes(moduleList, load, 0o644); err != nil {
			return err
		}
	}
	return a.WriteFile(out)
}
