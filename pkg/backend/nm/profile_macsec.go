package nm

import (
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// NetworkManager's macsec setting enums (NMSettingMacsecMode and
// NMSettingMacsecValidation).
const macsecModePSK = int32(0)

var nmMACsecValidation = map[nmstate.MACsecValidation]int32{"disabled": 0, "check": 1, "strict": 2}

// macsecSettings is the `macsec` setting, as nmstate writes it: the
// parent, pre-shared-key mode (NetworkManager then runs MKA through
// wpa_supplicant's D-Bus service with the CAK/CKN), encryption, port,
// validation and SCI sending. Port 0 (nmstate's default) is left out so
// NetworkManager's default, 1, applies, as upstream does. Offload needs
// NetworkManager 1.46 (macsec.offload); 1.42 refuses the key, so only
// "off" (the kernel's default) is accepted without it.
func macsecSettings(s Settings, ifc *nmstate.Interface) error {
	m := ifc.MACsec
	if m == nil || m.BaseIface == nil || *m.BaseIface == "" {
		return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "macsec.base-iface", Detail: "a macsec interface needs a base interface"}
	}
	sec := map[string]dbus.Variant{
		"parent": dbus.MakeVariant(*m.BaseIface),
		"mode":   dbus.MakeVariant(macsecModePSK),
	}
	if m.Encrypt != nil {
		sec["encrypt"] = dbus.MakeVariant(*m.Encrypt)
	}
	if m.MKACAK != nil {
		if *m.MKACAK == nmstate.HiddenSecret {
			return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "macsec.mka-cak",
				Detail: "the secret is hidden (" + nmstate.HiddenSecret + ") and the interface has none to keep"}
		}
		sec["mka-cak"] = dbus.MakeVariant(*m.MKACAK)
	}
	if m.MKACKN != nil {
		sec["mka-ckn"] = dbus.MakeVariant(*m.MKACKN)
	}
	if m.Port != nil && *m.Port > 0 {
		if *m.Port > 65534 {
			return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "macsec.port", Detail: fmt.Sprintf("port %d is not in 1..65534", *m.Port)}
		}
		sec["port"] = dbus.MakeVariant(int32(*m.Port))
	}
	if m.Validation != nil {
		v, ok := nmMACsecValidation[*m.Validation]
		if !ok {
			return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "macsec.validation", Detail: fmt.Sprintf("validation %s", *m.Validation)}
		}
		sec["validation"] = dbus.MakeVariant(v)
	}
	if m.SendSCI != nil {
		sec["send-sci"] = dbus.MakeVariant(*m.SendSCI)
	}
	if m.Offload != nil && *m.Offload != "off" {
		return &nmstate.Error{Kind: nmstate.NotSupported, Path: "macsec.offload",
			Detail: fmt.Sprintf("offload %s needs NetworkManager's macsec.offload (added in 1.46); the NetworkManager backend targets 1.42", *m.Offload)}
	}
	s["macsec"] = sec
	return nil
}
