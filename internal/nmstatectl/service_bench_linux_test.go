package nmstatectl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServiceDHCPInterfacesRSS: resident memory of a real
// `nmstatectl service` process that applied a state with 0 (baseline) or
// 10 DHCPv4 interfaces and holds their leases.
func BenchmarkServiceDHCPInterfacesRSS(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "nmstatectl")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/nmstatectl").CombinedOutput(); err != nil {
		b.Fatalf("building nmstatectl: %v\n%s", err, out)
	}
	for _, n := range []int{0, 10} {
		b.Run(fmt.Sprintf("interfaces=%d", n), func(b *testing.B) {
			var rss float64
			for i := 0; i < b.N; i++ {
				rss += float64(serviceRSS(b, bin, n))
			}
			b.ReportMetric(rss/float64(b.N), "rss-KiB")
		})
	}
}

func serviceRSS(b *testing.B, bin string, count int) int64 {
	nics := make([]string, count)
	var state strings.Builder
	state.WriteString("interfaces:\n")
	for i := range nics {
		nics[i] = fmt.Sprintf("eth%d", i)
		fmt.Fprintf(&state, "- name: %s\n  ipv4: {enabled: true, dhcp: true}\n", nics[i])
	}
	labNICs := nics
	if count == 0 {
		labNICs = []string{"eth0"} // a node has at least one NIC
	}
	node := benchLab(b, labNICs...)
	stateDir, configDir := b.TempDir(), b.TempDir()
	if err := os.WriteFile(filepath.Join(configDir, "10-dhcp.yml"), []byte(state.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(stateDir, "service.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "service", "--netns", node.NS.Path, "--resolv-conf", node.ResolvConf,
		"--state-dir", stateDir, "--config", configDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	// Let the start-up (apply of the file) settle before measuring.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(configDir, "10-dhcp.applied")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			b.Fatalf("the state file was not applied\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, n := range nics {
		for {
			if _, err := leasedIPv4(node, n); err == nil {
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(logf.Name())
				b.Fatalf("%s got no lease\n%s", n, log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
