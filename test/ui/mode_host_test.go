//go:build !qemu

package ui

import "time"

// nodeKernel is this machine's kernel (no bonding or 802.1q): the
// topology test puts a bridge on eth1. One port only: eth1 and eth2 reach
// the same lab switch, and a bridge of both (STP off) is a loop whose
// broadcast storm takes the lab's API server down. -tags qemu runs the nodes on
// Debian's kernel and stacks bond, VLAN and bridge (mode_qemu_test.go).
const nodeKernel = ""

const slowdown time.Duration = 1

// stackedPolicy is the policy of the topology test and the edges it must
// draw (graph edge ids: kind:lower->upper).
const stackedPolicy = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: ui-stack
spec:
  nodeSelector:
    kubernetes.io/hostname: NODE
  desiredState:
    interfaces:
    - name: br-ui
      type: linux-bridge
      state: up
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.77, prefix-length: 24}]}
      bridge:
        options: {stp: {enabled: false}}
        port: [{name: eth1}]
`

var stackedEdges = []string{"port:eth1->br-ui"}
