package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"golang.org/x/sys/unix"
)

// The hostname lives in the UTS namespace. Kernel mode has no hostname
// daemon: without Options.HostnameFile, what is set is what is configured
// (config reads as the running name). With it, the file is the static
// hostname, as /etc/hostname is for systemd: a named config is written
// there and set; an empty one (`config: ""`, HostnameDynamic) leaves the
// file empty and the node runtime sets the running hostname from a DHCP
// lease (SetDHCPHostname). A missing file means nothing was configured
// yet, and config reads as the running name, as without the option.

// readHostname reports the running hostname and the configured one.
func (b *Backend) readHostname() (*nmstate.Hostname, error) {
	name, err := b.runningHostname()
	if err != nil {
		return nil, err
	}
	config := name
	if static, ok, err := b.staticHostname(); err != nil {
		return nil, err
	} else if ok {
		config = static
	}
	return &nmstate.Hostname{Running: ptr(name), Config: ptr(config)}, nil
}

func (b *Backend) runningHostname() (string, error) {
	var name string
	err := b.inUTSNS(func() error {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return err
		}
		name = unix.ByteSliceToString(u.Nodename[:])
		return nil
	})
	return name, err
}

// staticHostname reads the hostname file; ok is false without one.
func (b *Backend) staticHostname() (name string, ok bool, err error) {
	if b.opts.HostnameFile == "" {
		return "", false, nil
	}
	data, err := os.ReadFile(b.opts.HostnameFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the static hostname: %w", err)
	}
	return strings.TrimSpace(string(data)), true, nil
}

// setHostname sets the hostname inside the UTS namespace only, and
// records it as the static one when there is a hostname file.
func (b *Backend) setHostname(name string) error {
	if err := b.inUTSNS(func() error { return unix.Sethostname([]byte(name)) }); err != nil {
		return err
	}
	if b.opts.HostnameFile == "" {
		return nil
	}
	return writeFileAtomic(b.opts.HostnameFile, []byte(name+"\n"))
}

// setHostnameDynamic empties the static hostname.
func (b *Backend) setHostnameDynamic() error {
	if b.uts < 0 {
		return notSupported("no UTS namespace configured for this backend")
	}
	if b.opts.HostnameFile == "" {
		return notSupported(`hostname config "" (a hostname from DHCP) needs a hostname file (the backend was opened without one)`)
	}
	return writeFileAtomic(b.opts.HostnameFile, nil)
}

// SetDHCPHostname sets the running hostname to one a DHCP lease names,
// when the static hostname is empty (config ""); otherwise it does
// nothing. It reports whether it changed the hostname.
func (b *Backend) SetDHCPHostname(name string) (bool, error) {
	if b.uts < 0 || name == "" {
		return false, nil
	}
	static, ok, err := b.staticHostname()
	if err != nil || !ok || static != "" {
		return false, err
	}
	cur, err := b.runningHostname()
	if err != nil || cur == name {
		return false, err
	}
	if err := b.inUTSNS(func() error { return unix.Sethostname([]byte(name)) }); err != nil {
		return false, fmt.Errorf("setting the hostname %s from DHCP: %w", name, err)
	}
	return true, nil
}
