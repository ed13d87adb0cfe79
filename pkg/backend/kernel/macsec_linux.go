package kernel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// MACsec links (drivers/net/macsec.c). The library has no typed macsec
// link: created with a raw RTM_NEWLINK, read from IFLA_INFO_DATA. The
// planner re-creates a macsec link whose section changes.
//
// With mka-cak and mka-ckn the keys are negotiated by MKA: the backend
// runs wpa_supplicant (driver macsec_linux) on the base interface with
// the pre-shared CAK/CKN. wpa_supplicant creates its transmit channel as
// a macsec link on the base with the SCI (base MAC, port); finding ours
// with that SCI (EBUSY), it uses it, so macsec0 is the secured link. Its
// port must therefore be the supplicant's macsec_port (1..65534); port 0
// (nmstate's default) leaves the supplicant's default, 1, and the
// supplicant then makes a link of its own next to ours. The CAK and CKN
// are not readable from the kernel: Show reports them from the
// supplicant directory, as it does 802.1x.

// macsecValidation maps nmstate's validation to MACSEC_VALIDATE_*.
var macsecValidation = map[nmstate.MACsecValidation]uint8{"disabled": 0, "check": 1, "strict": 2}

// macsecOffload maps nmstate's offload to MACSEC_OFFLOAD_*.
var macsecOffload = map[nmstate.MACsecOffload]uint8{"off": 0, "phy": 1, "mac": 2}

// addMACsec creates a macsec link on its base interface.
func (ex *executor) addMACsec(ifc nmstate.Interface) error {
	c := ifc.MACsec
	if c == nil || c.BaseIface == nil || *c.BaseIface == "" {
		return &kernelError{kind: nmstate.InvalidArgument, msg: "macsec " + ifc.Name + " needs base-iface"}
	}
	if (c.MKACAK == nil) != (c.MKACKN == nil) {
		return &kernelError{kind: nmstate.InvalidArgument, msg: "macsec " + ifc.Name + ": mka-cak and mka-ckn go together"}
	}
	base, err := ex.links.ifindex(*c.BaseIface)
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(ifc.Name)))
	req.AddData(nl.NewRtAttr(unix.IFLA_LINK, nl.Uint32Attr(uint32(base))))
	if ifc.MACAddress != nil {
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, ifc.MACAddress.Bytes()))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("macsec"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	if c.Port != nil {
		if *c.Port > 0xffff {
			return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("macsec %s: port %d is more than 65535", ifc.Name, *c.Port)}
		}
		port := make([]byte, 2)
		binary.BigEndian.PutUint16(port, uint16(*c.Port))
		data.AddRtAttr(unix.IFLA_MACSEC_PORT, port)
	}
	if c.Encrypt != nil {
		data.AddRtAttr(unix.IFLA_MACSEC_ENCRYPT, []byte{boolU8(*c.Encrypt)})
	}
	if c.SendSCI != nil {
		data.AddRtAttr(unix.IFLA_MACSEC_INC_SCI, []byte{boolU8(*c.SendSCI)})
	}
	if c.Validation != nil {
		data.AddRtAttr(unix.IFLA_MACSEC_VALIDATION, []byte{macsecValidation[*c.Validation]})
	}
	if c.Offload != nil && *c.Offload != "off" {
		data.AddRtAttr(unix.IFLA_MACSEC_OFFLOAD, []byte{macsecOffload[*c.Offload]})
	}
	req.AddData(info)
	if _, err := ex.b.rawRequest(req, 0); err != nil {
		return err
	}
	ex.links.added(&netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: ifc.Name}, LinkType: "macsec"})
	if c.MKACAK != nil {
		return ex.b.startMKA(ifc.Name, *c.BaseIface, c)
	}
	return nil
}

// macsecSection reads a macsec link's settings; the port is the SCI's
// last two bytes (IFLA_MACSEC_PORT is write-only).
func macsecSection(kl *kernelLink, v *linkView) *nmstate.MACsec {
	out := &nmstate.MACsec{}
	if a := kl.attrs(); a.ParentIndex != 0 {
		if name := v.name(a.ParentIndex); name != "" {
			out.BaseIface = &name
		}
	}
	if sci := kl.data[unix.IFLA_MACSEC_SCI]; len(sci) == 8 {
		out.Port = ptr(uint32(binary.BigEndian.Uint16(sci[6:8])))
	}
	if e := attrU8(kl.data, unix.IFLA_MACSEC_ENCRYPT); e != nil {
		out.Encrypt = ptr(*e != 0)
	}
	if s := attrU8(kl.data, unix.IFLA_MACSEC_INC_SCI); s != nil {
		out.SendSCI = ptr(*s != 0)
	}
	if val := attrU8(kl.data, unix.IFLA_MACSEC_VALIDATION); val != nil {
		for k, n := range macsecValidation {
			if n == *val {
				out.Validation = ptr(k)
			}
		}
	}
	if o := attrU8(kl.data, unix.IFLA_MACSEC_OFFLOAD); o != nil {
		for k, n := range macsecOffload {
			if n == *o {
				out.Offload = ptr(k)
			}
		}
	}
	return out
}

// mkaKeys is what the supplicant directory keeps of a macsec link.
type mkaKeys struct {
	CAK string `json:"cak"`
	CKN string `json:"ckn"`
}

// readMKA fills the MKA keys of the macsec link name into sec; false when
// the link has none (its keys are static or it is not ours).
func (b *Backend) readMKA(name string, sec *nmstate.MACsec) (bool, error) {
	p := b.supplicantPath(name, ".json")
	if p == "" || sec == nil {
		return false, nil
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the MKA keys of %s: %w", name, err)
	}
	var k mkaKeys
	if err := json.Unmarshal(data, &k); err != nil {
		return false, fmt.Errorf("%s: %w", p, err)
	}
	sec.MKACAK, sec.MKACKN = ptr(k.CAK), ptr(k.CKN)
	return true, nil
}

// startMKA runs wpa_supplicant's MKA for the macsec link name on base.
func (b *Backend) startMKA(name, base string, c *nmstate.MACsec) error {
	if b.supplicantPath(name, ".json") == "" {
		return notSupported("%s: MACsec MKA needs a supplicant directory (the backend was opened without one)", name)
	}
	if _, err := os.Stat(wpaSupplicant); err != nil {
		return &kernelError{kind: nmstate.Dependency, msg: fmt.Sprintf("%s: MACsec MKA needs wpa_supplicant (Debian's wpasupplicant)", name), err: err}
	}
	cak, ckn := *c.MKACAK, *c.MKACKN
	if cak == nmstate.HiddenSecret {
		return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("macsec %s: mka-cak is %s and no CAK is configured", name, nmstate.HiddenSecret)}
	}
	if !isHex(cak) || len(cak) != 32 {
		return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("macsec %s: mka-cak must be 32 hexadecimal digits", name)}
	}
	if !isHex(ckn) || len(ckn) < 2 || len(ckn) > 64 || len(ckn)%2 != 0 {
		return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("macsec %s: mka-ckn must be an even number (2 to 64) of hexadecimal digits", name)}
	}
	var conf strings.Builder
	conf.WriteString("# Generated by knmstate from the interface's macsec section\n")
	fmt.Fprintf(&conf, "ctrl_interface=%s\neapol_version=3\nap_scan=0\nnetwork={\n\tkey_mgmt=NONE\n\teapol_flags=0\n\tmacsec_policy=1\n", b.supplicantPath("ctrl", ""))
	integOnly := 0
	if c.Encrypt != nil && !*c.Encrypt {
		integOnly = 1
	}
	fmt.Fprintf(&conf, "\tmacsec_integ_only=%d\n", integOnly)
	if c.Port != nil && *c.Port >= 1 && *c.Port <= 65534 {
		fmt.Fprintf(&conf, "\tmacsec_port=%d\n", *c.Port)
	}
	fmt.Fprintf(&conf, "\tmka_cak=%s\n\tmka_ckn=%s\n}\n", cak, ckn)
	if err := os.MkdirAll(b.opts.SupplicantDir, 0o700); err != nil {
		return err
	}
	if err := writeFileAtomic(b.supplicantPath(name, ".conf"), []byte(conf.String())); err != nil {
		return err
	}
	if err := b.stopSupplicant(name); err != nil {
		return err
	}
	if err := b.startSupplicant(name, "macsec_linux", base); err != nil {
		return err
	}
	data, err := json.Marshal(mkaKeys{CAK: cak, CKN: ckn})
	if err != nil {
		return err
	}
	return writeFileAtomic(b.supplicantPath(name, ".json"), data)
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return s != ""
}
