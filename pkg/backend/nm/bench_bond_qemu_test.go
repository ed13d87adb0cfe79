//go:build qemu

package nm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

const benchBonds = 50

// bondsVLANState is n port-less active-backup bonds, each with a VLAN
// holding one IPv4 address.
func bondsVLANState(n int) string {
	var b strings.Builder
	b.WriteString("interfaces:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: bond%d\n  type: bond\n  state: up\n  ipv4: {enabled: false}\n  ipv6: {enabled: false}\n  link-aggregation: {mode: active-backup, options: {miimon: 100}, port: []}\n", i)
		fmt.Fprintf(&b, "- name: bond%d.10\n  type: vlan\n  state: up\n  ipv4: {enabled: true, address: [{ip: 10.78.%d.1, prefix-length: 24}]}\n  ipv6: {enabled: false}\n  vlan: {base-iface: bond%d, id: 10}\n", i, i, i)
	}
	return b.String()
}

// BenchmarkBonds50VLANCompare applies 50 bonds with a VLAN each (and an
// address on the VLAN), in the same run, three ways, each in a fresh
// namespace: through this backend (in-memory profiles, checkpoint,
// verification), through nmcli (per bond a `connection add` and `up` for
// the bond and for its VLAN, as a person would script it), and through
// the kernel backend. Besides wall time it counts CPU time: ours plus
// NetworkManager's (from /proc/PID/stat) for the backend, nmcli's plus
// NetworkManager's for nmcli, ours for the kernel. Medians of b.N; it
// asserts nothing about timing. In the kernel lane:
//
//	KERNEL_LANE_PACKAGES=pkg/backend/nm KERNEL_LANE_RUN='^$' KERNEL_LANE_BENCH=Bonds50VLANCompare bash hack/kernel-lane/run.sh
func BenchmarkBonds50VLANCompare(b *testing.B) {
	ctx := context.Background()
	desired, err := nmstate.Decode([]byte(bondsVLANState(benchBonds)))
	if err != nil {
		b.Fatal(err)
	}
	var nmT, nmcliT, kernelT, nmCPU, nmcliCPU, kernelCPU []time.Duration
	b.StopTimer()
	for range b.N {
		// NetworkManager backend.
		e := newBenchEnv(b)
		// Activations and the checkpoint get long timeouts: under TCG 100
		// activations take longer than the default minute.
		nb, err := nm.Open(ctx, nm.Options{NetNS: e.ns.Path, Bus: e.nm.Bus, ActivationTimeout: 20 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		pid := e.nm.PID()
		nm0, self0 := procCPU(b, pid), must(selfCPU())
		start := time.Now()
		// The checkpoint's timeout is raised: under TCG the apply takes
		// longer than the default minute, and NetworkManager would roll
		// back (deleting the new profiles) in the middle of it (this
		// backend does not extend its checkpoint while it works yet).
		if _, err := apply.Apply(ctx, nb, desired.Clone(), apply.Options{StateDir: filepath.Join(b.TempDir(), "state"), VerifyInterval: 100 * time.Millisecond, Timeout: 20 * time.Minute}); err != nil {
			b.Fatalf("%v\nNetworkManager's log (errors, warnings, settings):\n%s", err, logGrep(e.nm.Log, "<error>", "<warn>", "settings", "audit"))
		}
		nmT = append(nmT, time.Since(start))
		nmCPU = append(nmCPU, procCPU(b, pid)-nm0+must(selfCPU())-self0)
		nb.Close()

		// nmcli.
		e = newBenchEnv(b)
		pid = e.nm.PID()
		nm0 = procCPU(b, pid)
		_, child0 := selfCPU()
		start = time.Now()
		for i := range benchBonds {
			bond, vlan := fmt.Sprintf("bond%d", i), fmt.Sprintf("bond%d.10", i)
			for _, args := range [][]string{
				{"connection", "add", "type", "bond", "ifname", bond, "con-name", bond, "bond.options", "mode=active-backup,miimon=100",
					"ipv4.method", "disabled", "ipv6.method", "disabled", "save", "no"},
				{"connection", "up", bond},
				{"connection", "add", "type", "vlan", "ifname", vlan, "con-name", vlan, "vlan.parent", bond, "vlan.id", "10",
					"ipv4.method", "manual", "ipv4.addresses", fmt.Sprintf("10.78.%d.1/24", i), "ipv6.method", "disabled", "save", "no"},
				{"connection", "up", vlan},
			} {
				if out, err := nmrun.Nmcli(ctx, e.nm.Bus, args...); err != nil {
					b.Fatalf("nmcli %v: %v\n%s", args, err, out)
				}
			}
		}
		nmcliT = append(nmcliT, time.Since(start))
		_, child1 := selfCPU()
		nmcliCPU = append(nmcliCPU, procCPU(b, pid)-nm0+child1-child0)

		// Kernel backend.
		ns := nstest.New(b)
		kb, err := kernel.Open(ctx, kernel.Options{NetNS: ns.Path})
		if err != nil {
			b.Fatal(err)
		}
		self0 = must(selfCPU())
		start = time.Now()
		if _, err := apply.Apply(ctx, kb, desired.Clone(), apply.Options{StateDir: filepath.Join(b.TempDir(), "state"), VerifyInterval: 100 * time.Millisecond, Timeout: 20 * time.Minute}); err != nil {
			b.Fatal(err)
		}
		kernelT = append(kernelT, time.Since(start))
		kernelCPU = append(kernelCPU, must(selfCPU())-self0)
		kb.Close()
	}
	nmM, nmcliM, kM := median(nmT), median(nmcliT), median(kernelT)
	nmC, nmcliC, kC := median(nmCPU), median(nmcliCPU), median(kernelCPU)
	b.ReportMetric(float64(nmM.Milliseconds()), "networkmanager-ms")
	b.ReportMetric(float64(nmcliM.Milliseconds()), "nmcli-ms")
	b.ReportMetric(float64(kM.Milliseconds()), "kernel-ms")
	b.ReportMetric(float64(nmM)/float64(nmcliM), "nm/nmcli")
	b.ReportMetric(float64(nmM)/float64(kM), "nm/kernel")
	b.ReportMetric(float64(nmC)/float64(nmcliC), "cpu-nm/nmcli")
	b.Logf("50 bonds + VLANs: wall networkmanager backend %v, nmcli %v, kernel backend %v; CPU (with NetworkManager's) %v, %v, %v (medians of %d); ratios wall nm/nmcli %.2f, nm/kernel %.1f, CPU nm/nmcli %.2f",
		nmM.Round(time.Millisecond), nmcliM.Round(time.Millisecond), kM.Round(time.Millisecond),
		nmC.Round(time.Millisecond), nmcliC.Round(time.Millisecond), kC.Round(time.Millisecond), b.N,
		float64(nmM)/float64(nmcliM), float64(nmM)/float64(kM), float64(nmC)/float64(nmcliC))
}

// must is selfCPU's first result.
func must(self, _ time.Duration) time.Duration { return self }
