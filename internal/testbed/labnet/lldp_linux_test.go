package labnet

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mdlayher/packet"

	"github.com/knmstate/knmstate/pkg/lldp"
)

// TestSwitchSendsLLDP: with Options.LLDP the switch's lldpd announces
// LLDPSystemName on a node port added after it started; Close stops it and
// removes its directory.
func TestSwitchSendsLLDP(t *testing.T) {
	sw := newTestSwitch(t, Options{LLDP: true})
	node, err := sw.AddNode("node1", "eth1")
	if err != nil {
		t.Fatalf("AddNode: %v", err)
	}
	var conn *packet.Conn
	err = node.NS.Do(func() error {
		ifi, err := net.InterfaceByName("eth1")
		if err != nil {
			return err
		}
		conn, err = packet.Listen(ifi, packet.Datagram, lldp.EtherType, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A hang guard: the switch sends every 5 seconds.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1600)
	n, _, err := conn.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no LLDPDU from the switch: %v", err)
	}
	nb, err := lldp.Decode(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tlv := range nb.TLVs {
		if m, ok := tlv.(map[string]any); ok && m["system-name"] == LLDPSystemName {
			found = true
		}
	}
	if !found || nb.PortID == "" || nb.TTL == 0 {
		t.Errorf("LLDPDU %+v lacks system name %s, a port ID or a TTL", nb, LLDPSystemName)
	}
	dir, pid := sw.lldpDir, sw.lldpd.Process.Pid
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lldpd's directory %s left after Close (%v)", dir, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("lldpd %d still exists after Close (%v)", pid, err)
	}
}
