//go:build qemu

package ui

import (
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
)

// nodeKernel: Debian's kernel in a qemu guest (lab up --kernel debian),
// which has bonding and 802.1q: the topology test stacks a bond, a VLAN
// on the bond and a bridge on the VLAN.
const nodeKernel = lab.KernelDebian

// Everything in the guest is slower (TCG).
const slowdown time.Duration = 4

const stackedPolicy = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: ui-stack
spec:
  nodeSelector:
    kubernetes.io/hostname: NODE
  desiredState:
    interfaces:
    - name: bond0
      type: bond
      state: up
      ipv4: {enabled: false}
      link-aggregation: {mode: active-backup, port: [eth1, eth2]}
    - name: bond0.100
      type: vlan
      state: up
      ipv4: {enabled: false}
      vlan: {base-iface: bond0, id: 100}
    - name: br-ui
      type: linux-bridge
      state: up
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.77, prefix-length: 24}]}
      bridge:
        options: {stp: {enabled: false}}
        port: [{name: bond0.100}]
`

var stackedEdges = []string{"base:bond0->bond0.100", "port:bond0.100->br-ui", "port:eth1->bond0", "port:eth2->bond0"}
