package nmrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// NetworkManager does not authenticate 802.1X itself: it drives
// wpa_supplicant's D-Bus interface (fi.w1.wpa_supplicant1), which a node's
// system bus starts on demand. The private bus has no service activation,
// so with Options.Supplicant the instance starts wpa_supplicant itself: on
// the private bus (-u, DBUS_SYSTEM_BUS_ADDRESS) and inside the namespace
// (the spawner's thread), so the interfaces NetworkManager hands it are
// the namespace's. It needs no configuration file: NetworkManager adds
// each interface and its network over D-Bus.

const supplicantName = "fi.w1.wpa_supplicant1"

func (in *Instance) startSupplicant(ctx context.Context) error {
	if !in.opts.Supplicant {
		return nil
	}
	cmd := exec.Command("wpa_supplicant", "-u", "-t", "-f", filepath.Join(in.opts.Dir, "wpa_supplicant.log"))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DBUS_SYSTEM_BUS_ADDRESS=" + in.Bus}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := in.spawner.start(cmd); err != nil {
		return fmt.Errorf("nmrun: starting wpa_supplicant: %w", err)
	}
	in.wpa = cmd
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	// NetworkManager looks for the supplicant when a profile needs it;
	// waiting for its name here makes the first 802.1X activation not
	// race its start.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		select {
		case <-done:
			data, _ := os.ReadFile(filepath.Join(in.opts.Dir, "wpa_supplicant.log"))
			return fmt.Errorf("nmrun: wpa_supplicant exited at start:\n%s", data)
		case <-ctx.Done():
			return fmt.Errorf("nmrun: wpa_supplicant did not take %s on the bus: %w", supplicantName, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if owned(in.Bus, supplicantName) {
			return nil
		}
	}
}

func owned(addr, name string) bool {
	conn, err := dbus.Connect(addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	var has bool
	return conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has) == nil && has
}

func (in *Instance) stopSupplicant() {
	if in.wpa != nil && in.wpa.Process != nil {
		_ = in.wpa.Process.Kill()
		in.wpa = nil
	}
}
