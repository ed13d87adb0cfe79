package nmstate

// Bond is the `link-aggregation` section of a bond.
type Bond struct {
	Mode *BondMode `nms:"mode"`
	// Options keys are snake_case, as in the kernel's sysfs names.
	Options *BondOptions `nms:"options"`
	// Port lists the port names; `ports` is accepted as an alias.
	Port        []string         `nms:"port,alias=ports"`
	PortsConfig []BondPortConfig `nms:"ports-config"`
}

// BondMode is the bonding mode.
type BondMode string

const (
	BondModeRoundRobin   BondMode = "balance-rr"
	BondModeActiveBackup BondMode = "active-backup"
	BondModeXOR          BondMode = "balance-xor"
	BondModeBroadcast    BondMode = "broadcast"
	BondMode8023AD       BondMode = "802.3ad"
	BondModeTLB          BondMode = "balance-tlb"
	BondModeALB          BondMode = "balance-alb"
)

func (BondMode) enumSpec() enumSpec {
	return enumSpec{
		values:  []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"},
		aliases: numericAliases("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"),
	}
}

// numericAliases maps "0", "1", ... to the given values (kernel numbering).
func numericAliases(values ...string) map[string]string {
	m := make(map[string]string, len(values))
	for i, v := range values {
		m[itoa(i)] = v
	}
	return m
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// BondPortConfig is per-port bonding configuration.
type BondPortConfig struct {
	Name     string  `nms:"name,required"`
	Priority *int32  `nms:"priority"`
	QueueID  *uint16 `nms:"queue-id"`
}

// BondOptions are the bonding driver options (snake_case keys, as upstream).
type BondOptions struct {
	ADActorSysPrio  *uint16           `nms:"ad_actor_sys_prio"`
	ADActorSystem   *MAC              `nms:"ad_actor_system"`
	ADSelect        *BondADSelect     `nms:"ad_select"`
	ADUserPortKey   *uint16           `nms:"ad_user_port_key"`
	AllSlavesActive *BondAllSlaves    `nms:"all_slaves_active"`
	ARPAllTargets   *BondARPAll       `nms:"arp_all_targets"`
	ARPInterval     *uint32           `nms:"arp_interval"`
	ARPIPTarget     *string           `nms:"arp_ip_target"` // comma-separated IPv4 addresses
	ARPValidate     *BondARPValidate  `nms:"arp_validate"`
	ARPMissedMax    *uint8            `nms:"arp_missed_max"`
	DownDelay       *uint32           `nms:"downdelay"`
	FailOverMAC     *BondFailOverMAC  `nms:"fail_over_mac"`
	LACPRate        *BondLACPRate     `nms:"lacp_rate"`
	LPInterval      *uint32           `nms:"lp_interval"`
	MIIMon          *uint32           `nms:"miimon"`
	MinLinks        *uint32           `nms:"min_links"`
	NumGratARP      *uint8            `nms:"num_grat_arp"`
	NumUnsolNA      *uint8            `nms:"num_unsol_na"`
	PacketsPerSlave *uint32           `nms:"packets_per_slave"`
	Primary         *string           `nms:"primary"`
	PrimaryReselect *BondPrimaryResel `nms:"primary_reselect"`
	ResendIGMP      *uint32           `nms:"resend_igmp"`
	TLBDynamicLB    *bool             `nms:"tlb_dynamic_lb"`
	UpDelay         *uint32           `nms:"updelay"`
	UseCarrier      *bool             `nms:"use_carrier"`
	XmitHashPolicy  *BondXmitHash     `nms:"xmit_hash_policy"`
	BalanceSLB      *bool             `nms:"balance_slb,alias=balance-slb"`
}

// BondADSelect is the 802.3ad aggregator selection logic.
type BondADSelect string

func (BondADSelect) enumSpec() enumSpec {
	v := []string{"stable", "bandwidth", "count"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondAllSlaves is all_slaves_active.
type BondAllSlaves string

func (BondAllSlaves) enumSpec() enumSpec {
	v := []string{"dropped", "delivered"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondARPAll is arp_all_targets.
type BondARPAll string

func (BondARPAll) enumSpec() enumSpec {
	v := []string{"any", "all"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondARPValidate is arp_validate.
type BondARPValidate string

func (BondARPValidate) enumSpec() enumSpec {
	v := []string{"none", "active", "backup", "all", "filter", "filter_active", "filter_backup"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondFailOverMAC is fail_over_mac.
type BondFailOverMAC string

func (BondFailOverMAC) enumSpec() enumSpec {
	v := []string{"none", "active", "follow"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondLACPRate is lacp_rate.
type BondLACPRate string

func (BondLACPRate) enumSpec() enumSpec {
	v := []string{"slow", "fast"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondPrimaryResel is primary_reselect.
type BondPrimaryResel string

func (BondPrimaryResel) enumSpec() enumSpec {
	v := []string{"always", "better", "failure"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}

// BondXmitHash is xmit_hash_policy.
type BondXmitHash string

func (BondXmitHash) enumSpec() enumSpec {
	v := []string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}
	return enumSpec{values: v, aliases: numericAliases(v...)}
}
