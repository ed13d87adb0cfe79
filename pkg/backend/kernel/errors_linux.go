package kernel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"golang.org/x/sys/unix"
)

// kernelError is an error of this backend with an engine error kind, so
// nmstate.KindOf classifies it (Dependency for a missing kernel feature,
// Backend for a refused operation, ...) while errors.Is still sees the
// underlying errno.
type kernelError struct {
	kind nmstate.Kind
	msg  string
	err  error
}

func (e *kernelError) Error() string {
	switch {
	case e.msg == "":
		return e.err.Error()
	case e.err == nil:
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *kernelError) Unwrap() []error {
	out := []error{&nmstate.Error{Kind: e.kind, Detail: e.Error()}}
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}

// featureModules names, per interface type, the kernel feature and the
// module that provides it.
var featureModules = map[nmstate.InterfaceType][2]string{
	nmstate.TypeBond:         {"bonding", "bonding"},
	nmstate.TypeVLAN:         {"802.1q vlan", "8021q"},
	nmstate.TypeDummy:        {"dummy", "dummy"},
	nmstate.TypeVRF:          {"vrf", "vrf"},
	nmstate.TypeTeam:         {"team", "team"},
	nmstate.TypeVXLAN:        {"vxlan", "vxlan"},
	nmstate.TypeMacVlan:      {"macvlan", "macvlan"},
	nmstate.TypeMacVtap:      {"macvtap", "macvtap"},
	nmstate.TypeIPVlan:       {"ipvlan", "ipvlan"},
	nmstate.TypeOVSBridge:    {"openvswitch", "openvswitch"},
	nmstate.TypeOVSInterface: {"openvswitch", "openvswitch"},
	nmstate.TypeVeth:         {"veth", "veth"},
	nmstate.TypeLinuxBridge:  {"bridge", "bridge"},
	nmstate.TypeHSR:          {"hsr", "hsr"},
	nmstate.TypeMACsec:       {"macsec", "macsec"},
}

// isMissingFeature recognises the kernel's answers to a link kind (or an
// option) it was built without: EOPNOTSUPP from rtnl_newlink when no
// module provides the kind, ENODEV from some drivers' init paths.
func isMissingFeature(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV) ||
		strings.Contains(err.Error(), "operation not supported")
}

// linkCreateError classifies an error of creating link name of type typ.
func linkCreateError(name string, typ nmstate.InterfaceType, err error) error {
	if f, ok := featureModules[typ]; ok && isMissingFeature(err) {
		return missingModule(name, f, err)
	}
	return classify(err)
}

// missingModule is the Dependency error naming feature f = {feature,
// module} that link name needs.
func missingModule(name string, f [2]string, err error) error {
	return &kernelError{kind: nmstate.Dependency, msg: fmt.Sprintf("%s: kernel has no %s support (module %s)", name, f[0], f[1]), err: err}
}

// MissingFeatureError is, for a link of type typ that another backend
// failed to create (NetworkManager passes the kernel's "Operation not
// supported" on in its message), the error this backend gives for the
// same failure: a Dependency naming the kernel feature and its module.
// It is nil when cause is not the kernel's answer to a missing feature
// or typ needs no module.
func MissingFeatureError(name string, typ nmstate.InterfaceType, cause error) error {
	f, ok := featureModules[typ]
	if !ok || cause == nil || !strings.Contains(strings.ToLower(cause.Error()), "operation not supported") {
		return nil
	}
	return missingModule(name, f, cause)
}

// vlanFilteringError classifies an error of a bridge VLAN filtering
// request.
func vlanFilteringError(bridge string, err error) error {
	if isMissingFeature(err) {
		return &kernelError{kind: nmstate.Dependency, msg: bridge + ": kernel has no bridge vlan filtering support (CONFIG_BRIDGE_VLAN_FILTERING)", err: err}
	}
	return classify(err)
}

// classify gives a kernel error its kind.
func classify(err error) error {
	var ke *kernelError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke):
		return err
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return &kernelError{kind: nmstate.Permission, err: err}
	}
	return &kernelError{kind: nmstate.Backend, err: err}
}

// notSupported is an nmstate setting this backend cannot carry out.
func notSupported(format string, args ...any) error {
	return &kernelError{kind: nmstate.NotSupported, msg: fmt.Sprintf(format, args...)}
}
