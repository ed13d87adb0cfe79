package nmstate

// Libreswan is the `libreswan` section of an ipsec interface. Field names
// follow libreswan's ipsec.conf keys.
type Libreswan struct {
	Right                  *string        `nms:"right"`
	RightID                *string        `nms:"rightid"`
	RightRSASigKey         *string        `nms:"rightrsasigkey"`
	RightCert              *string        `nms:"rightcert"`
	Left                   *string        `nms:"left"`
	LeftID                 *string        `nms:"leftid"`
	LeftRSASigKey          *string        `nms:"leftrsasigkey"`
	LeftCert               *string        `nms:"leftcert"`
	IKEv2                  *string        `nms:"ikev2"`
	PSK                    *string        `nms:"psk"`
	IKELifetime            *string        `nms:"ikelifetime"`
	SALifetime             *string        `nms:"salifetime"`
	IKE                    *string        `nms:"ike"`
	ESP                    *string        `nms:"esp"`
	DPDDelay               *uint64        `nms:"dpddelay"`
	DPDTimeout             *uint64        `nms:"dpdtimeout"`
	DPDAction              *string        `nms:"dpdaction"`
	IPsecInterface         *string        `nms:"ipsec-interface"`
	AuthBy                 *string        `nms:"authby"`
	RightSubnet            *string        `nms:"rightsubnet"`
	LeftSubnet             *string        `nms:"leftsubnet"`
	LeftModeCfgClient      *bool          `nms:"leftmodecfgclient"`
	Type                   *LibreswanType `nms:"type"`
	HostAddrFamily         *string        `nms:"hostaddrfamily"`
	ClientAddrFamily       *string        `nms:"clientaddrfamily"`
	RequireIDOnCertificate *bool          `nms:"require-id-on-certificate"`
}

// LibreswanType is tunnel or transport.
type LibreswanType string

func (LibreswanType) enumSpec() enumSpec {
	return enumSpec{values: []string{"tunnel", "transport"}}
}
