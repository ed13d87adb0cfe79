package dhcp

import (
	"golang.org/x/net/bpf"
)

// bootpcFilter keeps only unfragmented UDP packets to port 68 on the
// DHCPv4 packet socket (a cooked socket: data starts at the IP header).
// Without it every IPv4 packet on the interface would be copied to the
// client.
func bootpcFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 9, Size: 1},                        // IP protocol
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 17, SkipTrue: 5}, // not UDP: drop
		bpf.LoadAbsolute{Off: 6, Size: 2},                        // flags + fragment offset
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: 3},
		bpf.LoadMemShift{Off: 0},          // X = IP header length
		bpf.LoadIndirect{Off: 2, Size: 2}, // UDP destination port
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 68, SkipTrue: 1},
		bpf.RetConstant{Val: 0x40000},
		bpf.RetConstant{Val: 0},
	})
}
