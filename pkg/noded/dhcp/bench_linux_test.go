package dhcp

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

// These benchmarks measure what the node runtime issue asks for; the
// tests above check behaviour and assert no timings.
//
//	go test -run '^$' -bench . -benchtime 5x ./pkg/noded/dhcp/

// BenchmarkDHCPv4TimeToLease: Start4 to the Bound event, on an interface
// that is already up (the client is stopped with release between runs).
func BenchmarkDHCPv4TimeToLease(b *testing.B) {
	_, node := labnettest.New(b, labnet.Options{})
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ev := make(events, 4)
		t0 := time.Now()
		c, err := Start4(context.Background(), Config{Namespace: node.NS.Handle, Interface: "eth0", OnEvent: ev.on})
		if err != nil {
			b.Fatal(err)
		}
		ev.next(b, LeaseBound, 30*time.Second)
		total += time.Since(t0)
		if err := c.Stop(true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/lease")
}

// BenchmarkDHCPv6TimeToLease: Start6 to the Bound event on a NIC that was
// just created, so it includes waiting for the link-local address's DAD.
func BenchmarkDHCPv6TimeToLease(b *testing.B) {
	sw, _ := labnettest.New(b, labnet.Options{})
	var total time.Duration
	for i := 0; i < b.N; i++ {
		node, err := sw.AddNode(fmt.Sprintf("n%d", i), "eth0")
		if err != nil {
			b.Fatal(err)
		}
		ev := make(events, 4)
		t0 := time.Now()
		c, err := Start6(context.Background(), Config{Namespace: node.NS.Handle, Interface: "eth0", OnEvent: ev.on})
		if err != nil {
			b.Fatal(err)
		}
		ev.next(b, LeaseBound, 30*time.Second)
		total += time.Since(t0)
		if err := c.Stop(true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/lease")
}

// BenchmarkSLAACTimeToAddress: from enabling autoconf on a NIC that was
// just created to a usable (non-tentative) SLAAC address.
func BenchmarkSLAACTimeToAddress(b *testing.B) {
	sw, _ := labnettest.New(b, labnet.Options{})
	var total time.Duration
	for i := 0; i < b.N; i++ {
		node, err := sw.AddNode(fmt.Sprintf("n%d", i), "eth0")
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := EnableIPv6Autoconf(node.NS.Handle, "eth0"); err != nil {
			b.Fatal(err)
		}
		waitSLAAC(b, node, "eth0", sw.Options.Gateway6.Masked(), 60*time.Second)
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/address")
}

// BenchmarkTenDHCPv4ClientsMemory: resident memory added by 10 concurrent
// DHCPv4 clients holding leases (one node with NICs eth0..eth9).
func BenchmarkTenDHCPv4ClientsMemory(b *testing.B) {
	nics := make([]string, 10)
	for i := range nics {
		nics[i] = fmt.Sprintf("eth%d", i)
	}
	_, node := labnettest.New(b, labnet.Options{}, nics...)
	var rssDelta, heapDelta float64
	var allBound time.Duration
	for i := 0; i < b.N; i++ {
		rss0, heap0 := memNow(b)
		ev := make(events, 64)
		var clients []*Client
		for _, nic := range nics {
			c, err := Start4(context.Background(), Config{Namespace: node.NS.Handle, Interface: nic, OnEvent: ev.on})
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		t0 := time.Now()
		for range nics {
			ev.next(b, LeaseBound, 30*time.Second)
		}
		allBound += time.Since(t0)
		rss1, heap1 := memNow(b)
		rssDelta += float64(rss1 - rss0)
		heapDelta += float64(heap1 - heap0)
		for _, c := range clients {
			if err := c.Stop(true); err != nil {
				b.Fatal(err)
			}
		}
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
