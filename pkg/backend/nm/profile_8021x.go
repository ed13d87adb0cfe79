package nm

import (
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// ieee8021xSettings maps the 802.1x section to NetworkManager's 802-1x
// setting; NetworkManager then runs the authentication through its
// wpa_supplicant (over D-Bus) before the device activates. Certificates
// and keys are paths, given to NetworkManager as file:// URIs (its
// "path scheme", NUL-terminated bytes). The section is the target's whole
// (Show reports it from the active profile, secrets included), so an apply
// that does not name 802.1x keeps it.
func ieee8021xSettings(s Settings, ifc *nmstate.Interface) error {
	x := ifc.IEEE8021X
	if x == nil {
		return nil
	}
	for key, v := range map[string]*string{"password": x.Password, "private-key-password": x.PrivateKeyPassword} {
		if v != nil && *v == nmstate.HiddenSecret {
			// No current secret to keep (merge replaces a hidden one with
			// the current value when there is one).
			return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: nmstate.Path("802.1x." + key),
				Detail: "the secret is hidden (" + nmstate.HiddenSecret + ") and the interface has none to keep"}
		}
	}
	sec := map[string]dbus.Variant{}
	if x.Identity != nil {
		sec["identity"] = dbus.MakeVariant(*x.Identity)
	}
	if x.EAPMethods != nil {
		sec["eap"] = dbus.MakeVariant(x.EAPMethods)
	}
	for key, v := range map[string]*string{"ca-cert": x.CACert, "client-cert": x.ClientCert, "private-key": x.PrivateKey} {
		if v != nil && *v != "" {
			sec[key] = dbus.MakeVariant(pathBlob(*v))
		}
	}
	for key, v := range map[string]*string{"ca-path": x.CAPath, "private-key-password": x.PrivateKeyPassword, "phase2-auth": x.Phase2Auth, "password": x.Password} {
		if v != nil {
			sec[key] = dbus.MakeVariant(*v)
		}
	}
	s["802-1x"] = sec
	return nil
}

// pathBlob is NetworkManager's path form of a certificate or key property.
func pathBlob(path string) []byte {
	return append([]byte("file://"+path), 0)
}

// blobPath reads a path-scheme blob back ("" when it holds the data
// itself).
func blobPath(b []byte) string {
	s := strings.TrimRight(string(b), "\x00")
	if p, ok := strings.CutPrefix(s, "file://"); ok {
		return p
	}
	return ""
}
