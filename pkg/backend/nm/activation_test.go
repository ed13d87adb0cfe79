package nm

import (
	"testing"

	"github.com/godbus/dbus/v5"
)

func TestJudgeActivation(t *testing.T) {
	for _, tc := range []struct {
		name               string
		a                  activation
		mayPend4, mayPend6 bool
		want               activationVerdict
	}{
		{"activated", activation{acActivated, devActivated, flagIP4Ready | flagIP6Ready}, false, false, activationDone},
		{"activated without flags", activation{acActivated, devActivated, 0}, false, false, activationDone},
		{"preparing", activation{acActivating, 40, 0}, true, true, activationPending},
		// The race: a static profile in IP_CONFIG (or IP_CHECK) has not
		// committed its addresses yet.
		{"static IPv4 in ip-config", activation{acActivating, devIPConfig, 0}, false, true, activationPending},
		{"static IPv4 in ip-check, IPv6 ready", activation{acActivating, 80, flagIP6Ready}, false, false, activationPending},
		{"static IPv4 ready, IPv6 autoconf pending", activation{acActivating, devIPConfig, flagIP4Ready}, false, true, activationDone},
		{"DHCPv4 pending, static IPv6 ready", activation{acActivating, devIPConfig, flagIP6Ready}, true, false, activationDone},
		{"both dynamic", activation{acActivating, devIPConfig, 0}, true, true, activationDone},
		{"controller waiting for ports", activation{acActivating, devIPConfig, flagIsController}, false, false, activationDone},
		{"controller before ip-config", activation{acActivating, 50, flagIsController}, false, false, activationPending},
		{"deactivated", activation{acDeactivated, 30, 0}, true, true, activationFailed},
		{"device failed", activation{acActivating, devFailed, 0}, true, true, activationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeActivation(tc.a, tc.mayPend4, tc.mayPend6); got != tc.want {
				t.Errorf("judgeActivation(%+v, %v, %v) = %v, want %v", tc.a, tc.mayPend4, tc.mayPend6, got, tc.want)
			}
		})
	}
}

func TestProfileMayPend(t *testing.T) {
	s := Settings{
		"ipv4": {"method": dbus.MakeVariant("manual")},
		"ipv6": {"method": dbus.MakeVariant("auto")},
	}
	if profileMayPend(s, "ipv4") {
		t.Error("static IPv4 may pend")
	}
	if !profileMayPend(s, "ipv6") {
		t.Error("IPv6 autoconf may not pend")
	}
	if !profileMayPend(Settings{}, "ipv4") {
		t.Error("a profile without ipv4 settings (a port) may not pend")
	}
}
