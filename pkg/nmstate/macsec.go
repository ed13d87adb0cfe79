package nmstate

// MACsec is the `macsec` section.
type MACsec struct {
	Encrypt    *bool             `nms:"encrypt"`
	BaseIface  *string           `nms:"base-iface"`
	MKACAK     *string           `nms:"mka-cak"`
	MKACKN     *string           `nms:"mka-ckn"`
	Port       *uint32           `nms:"port"`
	Validation *MACsecValidation `nms:"validation"`
	SendSCI    *bool             `nms:"send-sci"`
	Offload    *MACsecOffload    `nms:"offload"`
}

// MACsecValidation is the receive validation mode.
type MACsecValidation string

func (MACsecValidation) enumSpec() enumSpec {
	return enumSpec{values: []string{"disabled", "check", "strict"}}
}

// MACsecOffload is the offload mode.
type MACsecOffload string

func (MACsecOffload) enumSpec() enumSpec { return enumSpec{values: []string{"off", "phy", "mac"}} }
