package labvm

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/knmstate/knmstate/internal/testbed/initramfs"
)

//go:embed init.sh
var initScript []byte

// Sentinel starts the lines /init prints on the serial console: "BOOTED
// uptime=S kernel=R", "MODULES 0|1", "RUN PROGRAM", "EXIT STATUS".
const Sentinel = "@@LABVM@@"

// Busybox is the static busybox of this machine (Debian's busybox-static)
// that /init and the guest's shell tools are.
const Busybox = "/bin/busybox"

// BusyboxDir holds the guest's links to busybox's applets, last on
// /init's PATH: Debian's programs of the image (iproute2's ip rather than
// busybox's) come first.
const BusyboxDir = "/usr/libexec/busybox"

// Image is what goes into a guest's initramfs.
type Image struct {
	Kernel Kernel
	// Modules are loaded at boot, after Modules (the devices'), with their
	// dependencies.
	Modules []initramfs.ModuleRequest
	// Programs are ELF programs of this machine, added at their own paths
	// with their interpreter and libraries.
	Programs []string
	// Files are files of this machine: guest path -> this machine's path.
	Files map[string]string
	// Data are files given by content (mode 0600): guest path -> bytes.
	Data map[string][]byte
	// Command is what /init runs once the guest is up (argv; the program
	// must be in the image).
	Command []string
	// Users are system users besides root (a daemon's privilege-separation
	// user), each with a group of the same name and id.
	Users []User
	// Dirs are empty directories (mode 0755) besides the guest's own
	// (a daemon's compile-time state directory, a mount point).
	Dirs []string
}

// User is a system user of the guest.
type User struct {
	Name string
	ID   int
	Home string
}

// Write writes the initramfs to path.
func (im Image) Write(path string) error {
	if len(im.Command) == 0 {
		return fmt.Errorf("guest image: no command")
	}
	for _, arg := range im.Command {
		if strings.Contains(arg, "\n") {
			return fmt.Errorf("guest image: command argument %q holds a newline", arg)
		}
	}
	a := initramfs.New()
	if err := a.AddHostPath(Busybox); err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	// /init's interpreter, before busybox installs its other applets.
	if err := a.AddSymlink("/bin/sh", "busybox"); err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	// As on Debian: programs built with /var/run paths (NetworkManager's
	// run directory and its OVS plugin's /var/run/openvswitch/db.sock)
	// must find what is bound on /run.
	if err := a.AddSymlink("/var/run", "../run"); err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	if err := a.AddBytes("/init", initScript, 0o755); err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	for _, p := range im.Programs {
		if err := a.AddProgram(p); err != nil {
			return fmt.Errorf("guest image: %w", err)
		}
	}
	for dst, src := range im.Files {
		if err := a.AddFile(dst, src); err != nil {
			return fmt.Errorf("guest image: %w", err)
		}
	}
	for dst, data := range im.Data {
		if err := a.AddBytes(dst, data, 0o600); err != nil {
			return fmt.Errorf("guest image: %w", err)
		}
	}
	var reqs []initramfs.ModuleRequest
	for _, m := range Modules {
		reqs = append(reqs, initramfs.ModuleRequest{Name: m})
	}
	mods, err := initramfs.ResolveModules(im.Kernel.ModulesRoot, im.Kernel.Release, append(reqs, im.Modules...))
	if err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	list, err := a.AddModules("/lib/modules", mods)
	if err != nil {
		return fmt.Errorf("guest image: %w", err)
	}
	passwd, group := "root:x:0:0:root:/root:/bin/sh\n", "root:x:0:\n"
	for _, u := range im.Users {
		if strings.ContainsAny(u.Name+u.Home, ":\n") || u.ID <= 0 {
			return fmt.Errorf("guest image: user %q (id %d, home %q) is not a valid system user", u.Name, u.ID, u.Home)
		}
		passwd += fmt.Sprintf("%s:x:%d:%d::%s:/bin/false\n", u.Name, u.ID, u.ID, u.Home)
		group += fmt.Sprintf("%s:x:%d:\n", u.Name, u.ID)
	}
	for p, data := range map[string][]byte{
		"/etc/labvm/modules": list,
		"/etc/labvm/command": []byte(strings.Join(im.Command, "\n") + "\n"),
		// dnsmasq runs as root and looks root up.
		"/etc/passwd": []byte(passwd),
		"/etc/group":  []byte(group),
		// A mount point for the nodes' own resolv.conf files.
		"/etc/resolv.conf": nil,
	} {
		if err := a.AddBytes(p, data, 0o644); err != nil {
			return fmt.Errorf("guest image: %w", err)
		}
	}
	for _, d := range append([]string{"/proc", "/sys", "/dev", "/run", "/tmp", "/root", BusyboxDir}, im.Dirs...) {
		if err := a.AddDir(d, 0o755); err != nil {
			return fmt.Errorf("guest image: %w", err)
		}
	}
	return a.WriteFile(path)
}
