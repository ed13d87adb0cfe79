package nm

import (
	"context"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// macsecKeysFromProfile fills the MKA keys of a macsec interface from its
// active profile: the kernel does not expose them, and the CAK is a
// secret NetworkManager returns only through GetSecrets (as nmstate reads
// it; the caller is root on the node).
func (b *Backend) macsecKeysFromProfile(ctx context.Context, path dbus.ObjectPath, sec map[string]dbus.Variant, m *nmstate.MACsec) {
	if v, ok := sec["mka-ckn"]; ok {
		if s, ok := v.Value().(string); ok && s != "" {
			m.MKACKN = &s
		}
	}
	var secrets map[string]map[string]dbus.Variant
	if err := b.c.call(ctx, path, connIface+".GetSecrets", "macsec").Store(&secrets); err == nil {
		if v, ok := secrets["macsec"]["mka-cak"]; ok {
			if s, ok := v.Value().(string); ok && s != "" {
				m.MKACAK = &s
			}
		}
	}
}
