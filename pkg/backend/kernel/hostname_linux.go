package kernel

import (
	"github.com/knmstate/knmstate/pkg/nmstate"
	"golang.org/x/sys/unix"
)

// readHostname reports the UTS namespace's hostname as both running and
// config: kernel mode has no separate static store (no /etc/hostname of
// its own), so what is set is what is configured.
func (b *Backend) readHostname() (*nmstate.Hostname, error) {
	var name string
	err := b.inUTSNS(func() error {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return err
		}
		name = unix.ByteSliceToString(u.Nodename[:])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &nmstate.Hostname{Running: ptr(name), Config: ptr(name)}, nil
}

// setHostname sets the hostname inside the UTS namespace only.
func (b *Backend) setHostname(name string) error {
	return b.inUTSNS(func() error { return unix.Sethostname([]byte(name)) })
}
