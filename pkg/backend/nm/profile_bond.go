package nm

import (
	"strconv"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// bondDefaultARPMissedMax is the kernel's (and NetworkManager's) default
// arp_missed_max. NetworkManager before 1.44 does not know the option and
// refuses a profile carrying it, and 1.44+ refuses any value in the
// 802.3ad/tlb/alb modes: like nmstate, write it only when not the default
// or when the profile has it already.
const bondDefaultARPMissedMax = 2

// bondSettings is a bond's `bond` setting: bond.options (a{ss}) holds the
// mode and the kernel option names with string values, booleans as
// "0"/"1". As nmstate does, the options the apply gives are laid over
// the previous profile's, which a mode change clears. A bond without a
// profile yet (new, or made outside NetworkManager) starts from its
// merged options: the current ones are kept.
func bondSettings(s Settings, in ProfileInput) {
	ifc := in.Iface
	if ifc.Type != nmstate.TypeBond {
		return
	}
	mode := string(nmstate.BondModeRoundRobin) // the kernel's default
	if b := ifc.LinkAggregation; b != nil && b.Mode != nil {
		mode = string(*b.Mode)
	}
	prev, _ := settingValue(in.Previous, "bond", "options", map[string]string(nil)).(map[string]string)
	opts := map[string]string{}
	var given *nmstate.BondOptions
	if d := in.Desired; d != nil && d.LinkAggregation != nil {
		given = d.LinkAggregation.Options
	}
	switch {
	case in.Previous != nil && prev["mode"] == mode:
		for k, v := range prev {
			opts[k] = v
		}
	case in.Previous == nil && ifc.LinkAggregation != nil && ifc.LinkAggregation.Options != nil:
		bondOptions(opts, ifc.LinkAggregation.Options, prev)
	}
	if given != nil {
		bondOptions(opts, given, prev)
	}
	opts["mode"] = mode
	s["bond"] = map[string]dbus.Variant{"options": dbus.MakeVariant(opts)}
}

// bondOptions writes the options o gives into opts (prev: the previous
// profile's options).
func bondOptions(opts map[string]string, o *nmstate.BondOptions, prev map[string]string) {
	num := func(k string, v any) {
		switch v := v.(type) {
		case *uint32:
			if v != nil {
				opts[k] = strconv.FormatUint(uint64(*v), 10)
			}
		case *uint16:
			if v != nil {
				opts[k] = strconv.FormatUint(uint64(*v), 10)
			}
		case *uint8:
			if v != nil {
				opts[k] = strconv.FormatUint(uint64(*v), 10)
			}
		}
	}
	str := func(k string, v *string) {
		if v != nil {
			opts[k] = *v
		}
	}
	b := func(k string, v *bool) {
		if v != nil {
			opts[k] = map[bool]string{false: "0", true: "1"}[*v]
		}
	}
	num("ad_actor_sys_prio", o.ADActorSysPrio)
	// The kernel reports an unset actor system as the zero MAC, which it
	// (and so NetworkManager's sysfs write) refuses as a value.
	if o.ADActorSystem != nil && *o.ADActorSystem != "00:00:00:00:00:00" {
		opts["ad_actor_system"] = string(*o.ADActorSystem)
	}
	if o.ADSelect != nil {
		opts["ad_select"] = string(*o.ADSelect)
	}
	num("ad_user_port_key", o.ADUserPortKey)
	if o.AllSlavesActive != nil {
		opts["all_slaves_active"] = map[nmstate.BondAllSlaves]string{"dropped": "0", "delivered": "1"}[*o.AllSlavesActive]
	}
	if o.ARPAllTargets != nil {
		opts["arp_all_targets"] = string(*o.ARPAllTargets)
	}
	if o.ARPInterval != nil && *o.ARPInterval == 0 {
		// Without ARP monitoring the targets mean nothing: nmstate
		// clears them (unless given along).
		delete(opts, "arp_ip_target")
	}
	num("arp_interval", o.ARPInterval)
	str("arp_ip_target", o.ARPIPTarget)
	if o.ARPValidate != nil {
		opts["arp_validate"] = string(*o.ARPValidate)
	}
	num("downdelay", o.DownDelay)
	if o.FailOverMAC != nil {
		opts["fail_over_mac"] = string(*o.FailOverMAC)
	}
	if o.LACPRate != nil {
		opts["lacp_rate"] = string(*o.LACPRate)
	}
	num("lp_interval", o.LPInterval)
	num("miimon", o.MIIMon)
	num("min_links", o.MinLinks)
	// num_grat_arp and num_unsol_na are one kernel attribute
	// (IFLA_BOND_NUM_PEER_NOTIF): the one given sets both, else a
	// current value of the other would undo it.
	switch {
	case o.NumGratARP != nil && o.NumUnsolNA == nil:
		num("num_grat_arp", o.NumGratARP)
		num("num_unsol_na", o.NumGratARP)
	case o.NumUnsolNA != nil && o.NumGratARP == nil:
		num("num_grat_arp", o.NumUnsolNA)
		num("num_unsol_na", o.NumUnsolNA)
	default:
		num("num_grat_arp", o.NumGratARP)
		num("num_unsol_na", o.NumUnsolNA)
	}
	num("packets_per_slave", o.PacketsPerSlave)
	str("primary", o.Primary)
	if o.PrimaryReselect != nil {
		opts["primary_reselect"] = string(*o.PrimaryReselect)
	}
	num("resend_igmp", o.ResendIGMP)
	b("tlb_dynamic_lb", o.TLBDynamicLB)
	num("updelay", o.UpDelay)
	b("use_carrier", o.UseCarrier)
	if o.XmitHashPolicy != nil {
		opts["xmit_hash_policy"] = string(*o.XmitHashPolicy)
	}
	b("balance-slb", o.BalanceSLB)
	if o.ARPMissedMax != nil {
		if _, had := prev["arp_missed_max"]; had || *o.ARPMissedMax != bondDefaultARPMissedMax {
			num("arp_missed_max", o.ARPMissedMax)
		}
	}
	for k, v := range opts {
		if v == "" {
			delete(opts, k) // NetworkManager refuses empty option values
		}
	}
}

// bondPortSettings is a bond port's `bond-port` setting: written only
// when its queue-id or priority is not the default or the profile has
// the setting already, and prio only when not the default or present
// already, as nmstate does (NetworkManager before 1.34 has no bond-port
// setting, before 1.44 (and 1.42.8) no prio).
func bondPortSettings(s Settings, in ProfileInput) {
	ctl := in.ControllerIface
	if ctl == nil || ctl.LinkAggregation == nil {
		return
	}
	prev := in.Previous["bond-port"]
	for _, pc := range ctl.LinkAggregation.PortsConfig {
		if pc.Name != in.Iface.Name {
			continue
		}
		sec := map[string]dbus.Variant{}
		if pc.QueueID != nil && (*pc.QueueID != 0 || prev != nil) {
			sec["queue-id"] = dbus.MakeVariant(uint32(*pc.QueueID))
		}
		if _, had := prev["prio"]; pc.Priority != nil && (*pc.Priority != 0 || had) {
			sec["prio"] = dbus.MakeVariant(*pc.Priority)
		}
		if len(sec) > 0 {
			s["bond-port"] = sec
		}
	}
}
