package nmpolicy_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/knmstate/knmstate/pkg/nmpolicy"
)

// The handler's view: NNCP spec.capture and spec.desiredState (raw JSON), the
// node's current state, and the NNCE's status.capturedStates as the cache.
func ExampleGenerateState() {
	capture := map[string]string{
		"gw4":    `routes.running.destination == "0.0.0.0/0"`,
		"uplink": `interfaces.name == capture.gw4.routes.running.0.next-hop-interface`,
	}
	desiredJSON := []byte(`{"interfaces": [{"name": "storage310", "type": "vlan", "state": "up",
		"mtu": "{{ capture.uplink.interfaces.0.mtu }}",
		"vlan": {"base-iface": "{{ capture.uplink.interfaces.0.name }}", "id": 310}}]}`)
	currentJSON := []byte(`{"interfaces": [{"name": "eth0", "mtu": 9000}, {"name": "eth1", "mtu": 1500}],
		"routes": {"running": [{"destination": "0.0.0.0/0", "next-hop-interface": "eth1"}]}}`)
	var cache nmpolicy.CapturedStates // NNCE status.capturedStates; nil the first time

	desired, err := nmpolicy.DecodeDocument(desiredJSON)
	if err != nil {
		panic(err)
	}
	current, err := nmpolicy.DecodeDocument(currentJSON)
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 3, 4, 10, 15, 0, 0, time.UTC)
	gen, err := nmpolicy.GenerateState(nmpolicy.Policy{Capture: capture, DesiredState: desired}, current, cache, now)
	if err != nil {
		fmt.Println("failure generating desiredState and capturedStates:", err)
		return
	}
	out, _ := json.Marshal(gen.DesiredState)
	fmt.Println(string(out))
	stored, _ := json.Marshal(gen.CapturedStates["gw4"])
	fmt.Println(string(stored))
	// Output:
	// {"interfaces":[{"mtu":1500,"name":"storage310","state":"up","type":"vlan","vlan":{"base-iface":"eth1","id":310}}]}
	// {"state":{"routes":{"running":[{"destination":"0.0.0.0/0","next-hop-interface":"eth1"}]}},"metaInfo":{"version":"0","time":"2025-03-04T10:15:00Z"}}
}
