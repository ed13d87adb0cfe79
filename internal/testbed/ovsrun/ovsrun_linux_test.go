package ovsrun

import (
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// The daemons die with the OS thread that started them (Pdeathsig), and
// the Go runtime ends a thread whose goroutine exits locked to it (as
// after an unshare): they must outlive any number of such goroutines of
// the same process, since a lab creates node namespaces after starting
// the first nodes' OVS.
func TestDaemonsOutliveEndedThreads(t *testing.T) {
	ns := nstest.New(t)
	o := ForTest(t, ns.Path)
	// Many at once, so that every thread of the process, idle ones
	// included, is likely to run one.
	for range 32 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				runtime.Gosched()
			}() // exits locked: the runtime ends its thread
		}
		wg.Wait()
	}
	// A round trip through both daemons (ovs-vsctl waits until
	// ovs-vswitchd has applied the new bridge) gives a kill in flight
	// time to land.
	if out, err := exec.Command("ovs-vsctl", "--db="+o.Address, "--timeout=20", "add-br", "br-t", "--", "set", "Bridge", "br-t", "datapath_type=netdev").CombinedOutput(); err != nil {
		t.Errorf("ovs-vsctl add-br: %v: %s", err, out)
	}
	for i, done := range o.dones {
		select {
		case <-done:
			t.Errorf("%s exited: %v", o.procs[i].Args, o.procs[i].ProcessState)
		default:
		}
	}
}
