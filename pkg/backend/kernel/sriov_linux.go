package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// SR-IOV virtual functions. The VF count lives in sysfs only
// (sriov_numvfs of the physical function's device); everything per VF
// (MAC, VLAN, QoS, spoof check, trust, rates) is netlink (IFLA_VFINFO_LIST).
// The device is found from the link dump's IFLA_PARENT_DEV_BUS_NAME and
// IFLA_PARENT_DEV_NAME, so its directory is /sys/bus/<bus>/devices/<dev>:
// bus devices are not namespaced, unlike /sys/class/net, which shows the
// reader's network namespace.

// sysBus is where bus devices live; a variable of the Backend would let
// tests point elsewhere, but the real sysfs is what the lane tests.
const sysBus = "/sys/bus"

// sriovDir is the physical function's sysfs directory, or "" when the
// link has no SR-IOV capable device (veths, virtual links, plain NICs).
func sriovDir(kl *kernelLink) string {
	if kl.parentBus == "" || kl.parentDev == "" || strings.Contains(kl.parentBus+kl.parentDev, "/") {
		return ""
	}
	dir := filepath.Join(sysBus, kl.parentBus, "devices", kl.parentDev)
	if _, err := os.Stat(filepath.Join(dir, "sriov_numvfs")); err != nil {
		return ""
	}
	return dir
}

// readSysUint reads a sysfs file holding one number.
func readSysUint(path string) (uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return uint32(v), nil
}

// sriovSection reports the VFs of a physical function: the count from
// sysfs, each VF's settings from the dump. A device whose bus has no
// sriov_drivers_autoprobe (netdevsim) always probes: it reports true.
func sriovSection(kl *kernelLink, dir string) *nmstate.SRIOV {
	out := &nmstate.SRIOV{VFs: []nmstate.VFConf{}}
	if n, err := readSysUint(filepath.Join(dir, "sriov_numvfs")); err == nil {
		out.TotalVFs = ptr(n)
	}
	out.DriversAutoprobe = ptr(true)
	if n, err := readSysUint(filepath.Join(dir, "sriov_drivers_autoprobe")); err == nil {
		out.DriversAutoprobe = ptr(n != 0)
	}
	for _, vf := range kl.attrs().Vfs {
		c := nmstate.VFConf{
			ID:         uint32(vf.ID),
			SpoofCheck: ptr(vf.Spoofchk),
			Trust:      ptr(vf.Trust != 0),
			MinTxRate:  ptr(vf.MinTxRate),
			MaxTxRate:  ptr(vf.MaxTxRate),
			VlanID:     ptr(uint32(vf.Vlan)),
			QoS:        ptr(uint32(vf.Qos)),
		}
		if len(vf.Mac) == 6 {
			c.MACAddress = ptr(macText(vf.Mac))
		}
		if vf.VlanProto == int(netlink.VLAN_PROTOCOL_8021AD) {
			c.VlanProto = ptr(nmstate.VLANProto("802.1ad"))
		} else {
			c.VlanProto = ptr(nmstate.VLANProto("802.1q"))
		}
		out.VFs = append(out.VFs, c)
	}
	return out
}

// setSRIOV applies an sr-iov section to the physical function l: the VF
// count first (the kernel only changes a non-zero count through 0), then
// autoprobe, then each listed VF's settings.
func (ex *executor) setSRIOV(l netlink.Link, c *nmstate.SRIOV) error {
	name := l.Attrs().Name
	kl, err := ex.b.linkByIndex(l.Attrs().Index)
	if err != nil {
		return err
	}
	dir := sriovDir(kl)
	if dir == "" {
		return notSupported("%s: the device has no SR-IOV virtual functions (no sriov_numvfs)", name)
	}
	if c.DriversAutoprobe != nil {
		path := filepath.Join(dir, "sriov_drivers_autoprobe")
		err := writeSys(path, boolNum(*c.DriversAutoprobe))
		if errors.Is(err, fs.ErrNotExist) {
			if !*c.DriversAutoprobe {
				return notSupported("%s: the device's bus cannot turn VF driver autoprobe off", name)
			}
		} else if err != nil {
			return fmt.Errorf("setting drivers-autoprobe of %s: %w", name, classify(err))
		}
	}
	if c.TotalVFs != nil {
		path := filepath.Join(dir, "sriov_numvfs")
		cur, err := readSysUint(path)
		if err != nil {
			return fmt.Errorf("reading the VF count of %s: %w", name, classify(err))
		}
		if cur != *c.TotalVFs {
			if max, err := readSysUint(filepath.Join(dir, "sriov_totalvfs")); err == nil && *c.TotalVFs > max {
				return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("%s: total-vfs %d is more than the device's %d", name, *c.TotalVFs, max)}
			}
			if cur != 0 && *c.TotalVFs != 0 {
				if err := writeSys(path, "0"); err != nil {
					return fmt.Errorf("removing the VFs of %s: %w", name, classify(err))
				}
			}
			if err := writeSys(path, strconv.FormatUint(uint64(*c.TotalVFs), 10)); err != nil {
				return fmt.Errorf("setting %d VFs on %s: %w", *c.TotalVFs, name, classify(err))
			}
		}
		if kl, err = ex.b.linkByIndex(l.Attrs().Index); err != nil {
			return err
		}
	}
	for _, vf := range c.VFs {
		if err := ex.setVF(l, kl, vf); err != nil {
			return fmt.Errorf("setting VF %d of %s: %w", vf.ID, name, err)
		}
	}
	return nil
}

// setVF sets the given settings of one VF; a rate given alone keeps the
// other rate the VF has.
func (ex *executor) setVF(l netlink.Link, kl *kernelLink, vf nmstate.VFConf) error {
	h, id := ex.b.h, int(vf.ID)
	var cur *netlink.VfInfo
	for i := range kl.attrs().Vfs {
		if kl.attrs().Vfs[i].ID == id {
			cur = &kl.attrs().Vfs[i]
		}
	}
	if cur == nil {
		return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("no VF %d (the device has %d)", id, len(kl.attrs().Vfs))}
	}
	if vf.MACAddress != nil {
		if err := h.LinkSetVfHardwareAddr(l, id, net.HardwareAddr(vf.MACAddress.Bytes())); err != nil {
			return classify(err)
		}
	}
	if vf.VlanID != nil || vf.QoS != nil || vf.VlanProto != nil {
		vlan, qos, proto := cur.Vlan, cur.Qos, netlink.VLAN_PROTOCOL_8021Q
		if vf.VlanID != nil {
			vlan = int(*vf.VlanID)
		}
		if vf.QoS != nil {
			qos = int(*vf.QoS)
		}
		if vf.VlanProto != nil && *vf.VlanProto == "802.1ad" {
			proto = netlink.VLAN_PROTOCOL_8021AD
		}
		if err := h.LinkSetVfVlanQosProto(l, id, vlan, qos, int(proto)); err != nil {
			return classify(err)
		}
	}
	if vf.SpoofCheck != nil {
		if err := h.LinkSetVfSpoofchk(l, id, *vf.SpoofCheck); err != nil {
			return classify(err)
		}
	}
	if vf.Trust != nil {
		if err := h.LinkSetVfTrust(l, id, *vf.Trust); err != nil {
			return classify(err)
		}
	}
	if vf.MinTxRate != nil || vf.MaxTxRate != nil {
		lo, hi := cur.MinTxRate, cur.MaxTxRate
		if vf.MinTxRate != nil {
			lo = *vf.MinTxRate
		}
		if vf.MaxTxRate != nil {
			hi = *vf.MaxTxRate
		}
		if err := h.LinkSetVfRate(l, id, int(lo), int(hi)); err != nil {
			return classify(err)
		}
	}
	return nil
}

func writeSys(path, value string) error {
	return os.WriteFile(path, []byte(value), 0)
}

func boolNum(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// linkByIndex reads one link with its VF list and parent device.
func (b *Backend) linkByIndex(index int) (*kernelLink, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(linkExtMask)))
	msgs, err := b.rawRequest(req, unix.RTM_NEWLINK)
	if err != nil {
		return nil, classify(err)
	}
	if len(msgs) != 1 {
		return nil, &kernelError{kind: nmstate.Bug, msg: fmt.Sprintf("link %d: %d answers to one RTM_GETLINK", index, len(msgs))}
	}
	return parseLinkMessage(msgs[0])
}
