package noded

import (
	"context"
	"net/netip"
	"time"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// KernelInstaller is the Installer over the kernel backend of the node's
// namespace.
type KernelInstaller struct {
	B *kernel.Backend
}

var _ Installer = KernelInstaller{}

func (k KernelInstaller) ReplaceAddress(_ context.Context, iface string, p netip.Prefix, valid, preferred time.Duration) error {
	return k.B.ReplaceDynamicAddress(kernel.DynamicAddress{Interface: iface, Prefix: p, Valid: valid, Preferred: preferred})
}

func (k KernelInstaller) DeleteAddress(_ context.Context, iface string, p netip.Prefix) error {
	return k.B.DeleteDynamicAddress(iface, p)
}

func kernelRoute(r Route) kernel.DynamicRoute {
	return kernel.DynamicRoute{
		Interface: r.Interface, Destination: r.Destination, Gateway: r.Gateway,
		Table: r.Table, Metric: r.Metric, Origin: kernel.OriginDHCP,
	}
}

func (k KernelInstaller) AddRoute(_ context.Context, r Route) error {
	return k.B.AddDynamicRoute(kernelRoute(r))
}

func (k KernelInstaller) DeleteRoute(_ context.Context, r Route) error {
	return k.B.DeleteDynamicRoute(kernelRoute(r))
}

func (k KernelInstaller) ManagesDNS() bool { return k.B.HasResolvConf() }

func (k KernelInstaller) ReadDNS(context.Context) (nmstate.DNSConfig, error) {
	return k.B.ReadResolvConf()
}

func (k KernelInstaller) WriteDNS(_ context.Context, c nmstate.DNSConfig) error {
	return k.B.WriteResolvConf(c)
}

func (k KernelInstaller) SetSysctl(_ context.Context, s Sysctl) error {
	return k.B.SetSysctl(s.Interface, "net.ipv6.conf."+s.Interface+"."+s.Key, s.Value)
}

func (k KernelInstaller) FlushAutoconf(_ context.Context, iface string) error {
	return k.B.DeleteAutoconfAddresses(iface)
}

func (k KernelInstaller) LLDPLock() string { return k.B.LLDPLock() }

func (k KernelInstaller) LLDPEnabled(context.Context) ([]string, error) {
	return k.B.LLDPEnabled()
}

func (k KernelInstaller) WriteLLDPNeighbors(_ context.Context, iface string, ns map[string]LLDPNeighbor) error {
	out := make(map[string]kernel.LLDPNeighbor, len(ns))
	for key, n := range ns {
		out[key] = kernel.LLDPNeighbor{TLVs: n.TLVs, Expires: n.Expires}
	}
	return k.B.WriteLLDPNeighbors(iface, out)
}

func (k KernelInstaller) SetDHCPHostname(_ context.Context, name string) (bool, error) {
	return k.B.SetDHCPHostname(name)
}
