package nm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// oneAddress is a veth with one IPv4 address: the size of most of the e2e
// suite's applies, whose time is the backend's fixed cost per apply
// (reads, checkpoint, verification) rather than its cost per interface.
func oneAddress(i int) string {
	return fmt.Sprintf("interfaces:\n- {name: v0, type: veth, state: up, veth: {peer: v0p}, ipv4: {enabled: true, address: [{ip: 10.78.%d.1, prefix-length: 24}]}, ipv6: {enabled: false}}\n", i)
}

// BenchmarkSmallApplyCompare applies one address change to an existing
// veth, in the same run, through this backend and through the kernel
// backend (each in a namespace of its own, the veth made by a first apply
// not counted), and reports the median of each and their ratio. It
// asserts nothing about timing.
//
//	go test ./pkg/backend/nm -run '^$' -bench SmallApplyCompare -benchtime 10x
func BenchmarkSmallApplyCompare(b *testing.B) {
	ctx := context.Background()
	decode := func(i int) *nmstate.State {
		s, err := nmstate.Decode([]byte(oneAddress(i)))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	e := newBenchEnv(b)
	nb, err := nmOpen(ctx, e)
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	ns := nstest.New(b)
	kb, err := kernel.Open(ctx, kernel.Options{NetNS: ns.Path})
	if err != nil {
		b.Fatal(err)
	}
	defer kb.Close()
	opts := func() apply.Options {
		return apply.Options{StateDir: filepath.Join(b.TempDir(), "state"), VerifyInterval: 100 * time.Millisecond}
	}
	for _, be := range []apply.Backend{nb, kb} {
		if _, err := apply.Apply(ctx, be, decode(0), opts()); err != nil {
			b.Fatal(err)
		}
	}
	var nmT, kT []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := apply.Apply(ctx, nb, decode(1+i%200), opts()); err != nil {
			b.Fatal(err)
		}
		nmT = append(nmT, time.Since(start))
		start = time.Now()
		if _, err := apply.Apply(ctx, kb, decode(1+i%200), opts()); err != nil {
			b.Fatal(err)
		}
		kT = append(kT, time.Since(start))
	}
	nmM, kM := median(nmT), median(kT)
	b.ReportMetric(float64(nmM.Milliseconds()), "networkmanager-ms")
	b.ReportMetric(float64(kM.Milliseconds()), "kernel-ms")
	b.ReportMetric(float64(nmM)/float64(kM), "nm/kernel")
}
