package nmpolicy

import (
	"fmt"
	"testing"
)

// bigState builds a current state with n interfaces (ethernets, some down,
// some with addresses, every tenth a bridge) and m routes spread over them.
func bigState(n, m int) map[string]any {
	ifaces := make([]any, 0, n)
	for i := 0; i < n; i++ {
		iface := map[string]any{
			"name":        fmt.Sprintf("eth%d", i),
			"type":        "ethernet",
			"state":       "up",
			"mtu":         int64(1500),
			"mac-address": fmt.Sprintf("52:54:00:00:%02X:%02X", i/256, i%256),
			"ipv4": map[string]any{
				"enabled": true,
				"dhcp":    false,
				"address": []any{
					map[string]any{"ip": fmt.Sprintf("10.%d.%d.1", i/256, i%256), "prefix-length": int64(24)},
					map[string]any{"ip": fmt.Sprintf("10.%d.%d.2", i/256, i%256), "prefix-length": int64(24)},
				},
			},
			"lldp": map[string]any{"enabled": false},
		}
		if i%7 == 3 {
			iface["state"] = "down"
		}
		if i%10 == 9 {
			iface["type"] = "linux-bridge"
			iface["bridge"] = map[string]any{
				"options": map[string]any{"stp": map[string]any{"enabled": true}},
				"port":    []any{map[string]any{"name": fmt.Sprintf("eth%d", i-1)}},
			}
		}
		ifaces = append(ifaces, iface)
	}
	route := func(i int) any {
		dest := fmt.Sprintf("172.%d.%d.0/24", 16+i/256%16, i%256)
		if i == 0 {
			dest = "0.0.0.0/0"
		}
		return map[string]any{
			"destination":        dest,
			"metric":             int64(100 + i%50),
			"next-hop-address":   "10.0.0.254",
			"next-hop-interface": fmt.Sprintf("eth%d", i%n),
			"table-id":           int64(254),
		}
	}
	running := make([]any, m)
	config := make([]any, m/2)
	for i := range running {
		running[i] = route(i)
	}
	for i := range config {
		config[i] = route(i)
	}
	return map[string]any{
		"interfaces": ifaces,
		"routes":     map[string]any{"running": running, "config": config},
		"hostname":   map[string]any{"running": "big", "config": "big"},
	}
}

var benchPolicy = Policy{
	Capture: map[string]string{
		"gw4":      `routes.running.destination == "0.0.0.0/0"`,
		"uplink":   `interfaces.name == capture.gw4.routes.running.0.next-hop-interface`,
		"eth-up":   `interfaces.type == ethernet`,
		"eth-lldp": `capture.eth-up | interfaces.lldp.enabled := true`,
		"holder":   `interfaces.ipv4.address.ip == "10.1.200.2"`,
	},
	DesiredState: map[string]any{
		"interfaces": []any{
			map[string]any{
				"name": "storage310", "type": "vlan", "state": "up",
				"mtu":  "{{ capture.uplink.interfaces.0.mtu }}",
				"vlan": map[string]any{"base-iface": "{{ capture.uplink.interfaces.0.name }}", "id": int64(310)},
			},
			map[string]any{"name": "x", "description": "on {{ capture.holder.interfaces.0.name }}"},
		},
		"lldp": "{{ capture.eth-lldp.interfaces }}",
	},
}

// BenchmarkGenerateState resolves 5 captures against 500 interfaces and
// 2,000 routes (target: under 5 ms per operation).
func BenchmarkGenerateState(b *testing.B) {
	current := bigState(500, 2000)
	if _, err := GenerateState(benchPolicy, current, nil, testNow); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := GenerateState(benchPolicy, current, nil, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerateStateCached is the re-rendering path: every capture comes
// from the cache.
func BenchmarkGenerateStateCached(b *testing.B) {
	current := bigState(500, 2000)
	gen, err := GenerateState(benchPolicy, current, nil, testNow)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := GenerateState(benchPolicy, current, gen.CapturedStates, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBigStateBenchPolicy(t *testing.T) {
	gen, err := GenerateState(benchPolicy, bigState(500, 2000), nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	d := gen.DesiredState.(map[string]any)
	if got := d["interfaces"].([]any)[0].(map[string]any)["vlan"].(map[string]any)["base-iface"]; got != "eth0" {
		t.Errorf("base-iface = %v, want eth0", got)
	}
	if got := d["interfaces"].([]any)[1].(map[string]any)["description"]; got != "on eth456" {
		t.Errorf("description = %v, want on eth456", got)
	}
	if got := len(d["lldp"].([]any)); got != 450 {
		t.Errorf("%d ethernets with lldp, want 450", got)
	}
}
