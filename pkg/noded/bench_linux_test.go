package noded

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

// hasLeasedIPv4 reports whether ifname carries a dynamic IPv4 address.
func hasLeasedIPv4(tb testing.TB, node *labnet.Node, ifname string) bool {
	for _, a := range kernelAddrs(tb, node, ifname, netlink.FAMILY_V4) {
		if a.Flags&unix.IFA_F_PERMANENT == 0 && uint32(a.ValidLft) != 0xffffffff {
			return true
		}
	}
	return false
}

// usableSLAAC reports whether ifname has a SLAAC address in prefix that
// passed duplicate address detection.
func usableSLAAC(tb testing.TB, node *labnet.Node, ifname string, prefix netip.Prefix) bool {
	for _, a := range kernelAddrs(tb, node, ifname, netlink.FAMILY_V6) {
		p := addrPrefix(a)
		if prefix.Contains(p.Addr()) && p.Bits() == 64 && a.Flags&(unix.IFA_F_PERMANENT|unix.IFA_F_TENTATIVE) == 0 {
			return true
		}
	}
	return false
}

func poll(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// BenchmarkApplyToAddressDHCPv4: from Update with dhcp: true to the leased
// address installed in the kernel. Each round ends with dhcp off (release
// and removal).
func BenchmarkApplyToAddressDHCPv4(b *testing.B) {
	_, node := labnettest.New(b, labnet.Options{})
	rt := startRuntime(b, node, "")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rt.update(b, fmt.Sprintf(dhcp4Eth0, ""))
		poll(b, 30*time.Second, "dhcpv4 address", func() bool { return hasLeasedIPv4(b, node, "eth0") })
		total += time.Since(t0)
		rt.update(b, "interfaces:\n- name: eth0\n  ipv4: {enabled: false}\n")
		poll(b, 10*time.Second, "address removed", func() bool { return !hasLeasedIPv4(b, node, "eth0") })
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/address")
}

// BenchmarkApplyToAddressSLAAC: from Update with autoconf: true to a usable
// (DAD passed) SLAAC address, on an interface whose SLAAC was off and its
// addresses flushed. The runtime's router solicitation gets the
// advertisement at once; DAD (1 probe, 1s) is most of the time.
func BenchmarkApplyToAddressSLAAC(b *testing.B) {
	sw, node := labnettest.New(b, labnet.Options{})
	rt := startRuntime(b, node, "")
	prefix := sw.Options.Gateway6.Masked()
	var total, seen time.Duration
	for i := 0; i < b.N; i++ {
		// Not timed: SLAAC off, its addresses gone, no spec left.
		rt.update(b, "interfaces:\n- name: eth0\n  ipv6: {enabled: true, dhcp: false, autoconf: false}\n")
		if err := node.NS.Sysctl("net/ipv6/conf/eth0/autoconf", "0"); err != nil {
			b.Fatal(err)
		}
		if err := rt.b.DeleteAutoconfAddresses("eth0"); err != nil {
			b.Fatal(err)
		}
		if usableSLAAC(b, node, "eth0", prefix) {
			b.Fatal("SLAAC address still there before the round")
		}
		t0 := time.Now()
		rt.update(b, "interfaces:\n- name: eth0\n  ipv6: {enabled: true, autoconf: true}\n")
		poll(b, 60*time.Second, "SLAAC address", func() bool { return len(slaacAddrs(b, node, "eth0", prefix)) > 0 })
		seen += time.Since(t0)
		poll(b, 60*time.Second, "SLAAC address", func() bool { return usableSLAAC(b, node, "eth0", prefix) })
		total += time.Since(t0)
	}
	b.ReportMetric(float64(seen.Microseconds())/float64(b.N)/1000, "ms/tentative")
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/address")
}

// BenchmarkRuntimeTenDHCPInterfaces: memory the runtime adds to its
// process for 10 interfaces with DHCPv4 leases (clients, sockets, record),
// measured after all are bound; and the time until all are.
func BenchmarkRuntimeTenDHCPInterfaces(b *testing.B) {
	nics := make([]string, 10)
	for i := range nics {
		nics[i] = fmt.Sprintf("eth%d", i)
	}
	_, node := labnettest.New(b, labnet.Options{}, nics...)
	var on, off strings.Builder
	on.WriteString("interfaces:\n")
	off.WriteString("interfaces:\n")
	for _, n := range nics {
		fmt.Fprintf(&on, "- name: %s\n  ipv4: {enabled: true, dhcp: true}\n", n)
		fmt.Fprintf(&off, "- name: %s\n  ipv4: {enabled: false}\n", n)
	}
	var rssDelta, heapDelta float64
	var allBound time.Duration
	for i := 0; i < b.N; i++ {
		rss0, heap0 := memNow(b)
		rt := startRuntime(b, node, "")
		t0 := time.Now()
		rt.update(b, on.String())
		for _, n := range nics {
			poll(b, 60*time.Second, n+" lease", func() bool { _, ok := leaseOf(rt.Runtime, n, 4); return ok })
		}
		allBound += time.Since(t0)
		rss1, heap1 := memNow(b)
		rssDelta += float64(rss1 - rss0)
		heapDelta += float64(heap1 - heap0)
		rt.update(b, off.String())
		rt.stop()
	}
	b.ReportMetric(rssDelta/float64(b.N), "rss-delta-KiB")
	b.ReportMetric(heapDelta/float64(b.N)/1024, "heap-delta-KiB")
	b.ReportMetric(float64(allBound.Microseconds())/float64(b.N)/1000, "ms-all-bound")
}

// memNow returns VmRSS in KiB and the live heap in bytes after a GC.
func memNow(tb testing.TB) (rssKiB int64, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return rssKiB, ms.HeapAlloc
}

func TestTenDHCPInterfaces(t *testing.T) {
	nics := make([]string, 10)
	var y strings.Builder
	y.WriteString("interfaces:\n")
	for i := range nics {
		nics[i] = fmt.Sprintf("eth%d", i)
		fmt.Fprintf(&y, "- name: %s\n  ipv4: {enabled: true, dhcp: true}\n", nics[i])
	}
	_, node := labnettest.New(t, labnet.Options{}, nics...)
	rt := startRuntime(t, node, "")
	rt.update(t, y.String())
	seen := map[netip.Prefix]string{}
	for _, n := range nics {
		l := waitLease(t, rt.Runtime, n, 4)
		dynamicAddr(t, node, n, l.Address)
		if other, dup := seen[l.Address]; dup {
			t.Errorf("%s and %s leased the same %s", n, other, l.Address)
		}
		seen[l.Address] = n
	}
}
