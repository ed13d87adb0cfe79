package nm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

const benchBridges = 50

// bridgesState is n linux bridges with one IPv4 address each.
func bridgesState(n int) string {
	var b strings.Builder
	b.WriteString("interfaces:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: br%d\n  type: linux-bridge\n  state: up\n  ipv4: {enabled: true, address: [{ip: 10.77.%d.1, prefix-length: 24}]}\n  ipv6: {enabled: false}\n  bridge: {options: {stp: {enabled: false}}, port: []}\n", i, i)
	}
	return b.String()
}

// BenchmarkBridges50Compare applies 50 bridges with one address each,
// in the same run, three ways, each in a fresh namespace: through this
// backend (in-memory profiles, checkpoint, verification), through nmcli
// (one `connection add` and one `connection up` per bridge, as a person
// would script it), and through the kernel backend. It reports the median
// wall time of each side and the ratios networkmanager/nmcli and
// networkmanager/kernel. It asserts nothing about timing.
//
//	go test ./pkg/backend/nm -run '^$' -bench Bridges50Compare -benchtime 3x
func BenchmarkBridges50Compare(b *testing.B) {
	ctx := context.Background()
	desired, err := nmstate.Decode([]byte(bridgesState(benchBridges)))
	if err != nil {
		b.Fatal(err)
	}
	var nmT, nmcliT, kernelT []time.Duration
	b.StopTimer()
	for range b.N {
		// NetworkManager backend.
		e := newBenchEnv(b)
		nb, err := nmOpen(ctx, e)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := apply.Apply(ctx, nb, desired.Clone(), apply.Options{StateDir: filepath.Join(b.TempDir(), "state"), VerifyInterval: 100 * time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		nmT = append(nmT, time.Since(start))
		nb.Close()

		// nmcli.
		e = newBenchEnv(b)
		start = time.Now()
		for i := range benchBridges {
			name := fmt.Sprintf("br%d", i)
			if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "connection", "add", "type", "bridge", "ifname", name, "con-name", name,
				"bridge.stp", "no", "ipv4.method", "manual", "ipv4.addresses", fmt.Sprintf("10.77.%d.1/24", i), "ipv6.method", "disabled", "save", "no"); err != nil {
				b.Fatalf("nmcli: %v\n%s", err, out)
			}
			if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "connection", "up", name); err != nil {
				b.Fatalf("nmcli: %v\n%s", err, out)
			}
		}
		nmcliT = append(nmcliT, time.Since(start))

		// Kernel backend.
		ns := nstest.New(b)
		kb, err := kernel.Open(ctx, kernel.Options{NetNS: ns.Path})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if _, err := apply.Apply(ctx, kb, desired.Clone(), apply.Options{StateDir: filepath.Join(b.TempDir(), "state"), VerifyInterval: 100 * time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		kernelT = append(kernelT, time.Since(start))
		kb.Close()
	}
	nmM, nmcliM, kM := median(nmT), median(nmcliT), median(kernelT)
	b.ReportMetric(float64(nmM.Milliseconds()), "networkmanager-ms")
	b.ReportMetric(float64(nmcliM.Milliseconds()), "nmcli-ms")
	b.ReportMetric(float64(kM.Milliseconds()), "kernel-ms")
	b.ReportMetric(float64(nmM)/float64(nmcliM), "nm/nmcli")
	b.ReportMetric(float64(nmM)/float64(kM), "nm/kernel")
	b.Logf("50 bridges: networkmanager backend %v, nmcli %v, kernel backend %v (medians of %d); ratios nm/nmcli %.2f, nm/kernel %.1f",
		nmM.Round(time.Millisecond), nmcliM.Round(time.Millisecond), kM.Round(time.Millisecond), b.N, float64(nmM)/float64(nmcliM), float64(nmM)/float64(kM))
}

// benchEnv is a namespace with a private NetworkManager.
type benchEnv struct {
	ns *nstest.NS
	nm *nmrun.Instance
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	ns := nstest.New(b)
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(b.TempDir(), "nm")})
	b.Cleanup(func() { in.Stop() })
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{ns: ns, nm: in}
}

func nmOpen(ctx context.Context, e *benchEnv) (*nmBackend, error) {
	return openNM(ctx, e.ns.Path, e.nm.Bus)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
