package nm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"
)

// What NetworkManager 1.42's checkpoints do not restore, the backend
// records next to the checkpoint's object path, in the checkpoint id that
// pkg/apply writes into its record before the first change (so a rollback
// from another process, the watchdog, restores it too):
//
//   - the global DNS configuration (TRACK_INTERNAL_GLOBAL_DNS is 1.48);
//   - the devices it did not manage: an apply that named one made
//     NetworkManager manage it, and its rollback leaves it managed.
//
// The id is "<path>" or "<path>#<base64url JSON>".

// cpExtra is what the id carries besides the object path.
type cpExtra struct {
	GlobalDNS *GlobalDNS `json:"globalDNS,omitempty"`
	Unmanaged []string   `json:"unmanaged,omitempty"`
}

func encodeCheckpointID(p dbus.ObjectPath, x cpExtra) string {
	if x.GlobalDNS.Empty() && len(x.Unmanaged) == 0 {
		return string(p)
	}
	data, _ := json.Marshal(x)
	return string(p) + "#" + base64.RawURLEncoding.EncodeToString(data)
}

func decodeCheckpointID(id string) (dbus.ObjectPath, cpExtra, error) {
	p, enc, ok := strings.Cut(id, "#")
	var x cpExtra
	if !ok {
		return dbus.ObjectPath(p), x, nil
	}
	data, err := base64.RawURLEncoding.DecodeString(enc)
	if err == nil {
		err = json.Unmarshal(data, &x)
	}
	if err != nil {
		return "", x, fmt.Errorf("NetworkManager checkpoint id %q: %w", id, err)
	}
	return dbus.ObjectPath(p), x, nil
}

// recordExtra reads what the checkpoint id must carry.
func (b *Backend) recordExtra(ctx context.Context) (cpExtra, error) {
	var x cpExtra
	g, err := b.c.globalDNS()
	if err != nil {
		return x, fmt.Errorf("reading NetworkManager's global DNS: %w", err)
	}
	if !g.Empty() {
		x.GlobalDNS = g
	}
	devs, err := b.c.devices(ctx)
	if err != nil {
		return x, err
	}
	for name, d := range devs {
		if d.real && d.state == devUnmanaged {
			x.Unmanaged = append(x.Unmanaged, name)
		}
	}
	slices.Sort(x.Unmanaged)
	return x, nil
}

// restoreExtra gives back what NetworkManager's rollback did not: the
// global DNS and the unmanaged state of the devices that had it.
func (b *Backend) restoreExtra(ctx context.Context, x cpExtra) error {
	var errs []error
	if err := b.c.ensureGlobalDNS(x.GlobalDNS); err != nil {
		errs = append(errs, fmt.Errorf("restoring NetworkManager's global DNS: %w", err))
	}
	if len(x.Unmanaged) > 0 {
		devs, err := b.c.devices(ctx)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, name := range x.Unmanaged {
			d := devs[name]
			if d == nil || !d.real || d.state == devUnmanaged {
				continue
			}
			// After a rollback NetworkManager 1.42 already holds the
			// device's "unmanaged by the user" flag it had, yet keeps it
			// managed, and setting the flag again changes nothing (seen in
			// TestUnmanagedAtRunTimeTakenOver): managed then unmanaged
			// makes it take effect.
			for _, managed := range []bool{true, false} {
				if err := b.c.obj(d.path).SetProperty(deviceIface+".Managed", dbus.MakeVariant(managed)); err != nil {
					errs = append(errs, fmt.Errorf("setting %s unmanaged again: %w", name, err))
					break
				}
			}
		}
	}
	return errors.Join(errs...)
}
