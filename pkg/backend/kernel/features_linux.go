package kernel

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BridgeVLANFiltering reports whether the running kernel can filter VLANs
// on linux bridges (CONFIG_BRIDGE_VLAN_FILTERING). It is a property of
// the kernel, not of a namespace, so it is asked in a private network
// namespace made for the question: no namespace anyone can see gets even
// a short-lived bridge, and no change event reaches a watcher. It needs
// the right to create network namespaces (CAP_SYS_ADMIN), as a handler
// has.
func BridgeVLANFiltering() (bool, error) {
	type answer struct {
		ok  bool
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		// The thread is never unlocked: it ends with this goroutine, and
		// the namespace, which only it holds, with the thread.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- answer{err: fmt.Errorf("private network namespace: %w", err)}
			return
		}
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			ch <- answer{err: fmt.Errorf("netlink in a private namespace: %w", err)}
			return
		}
		defer h.Close()
		on := true
		la := netlink.NewLinkAttrs()
		la.Name = "probe0"
		err = h.LinkAdd(&netlink.Bridge{LinkAttrs: la, VlanFiltering: &on})
		switch {
		case err == nil:
			ch <- answer{ok: true}
		case isMissingFeature(err):
			ch <- answer{ok: false}
		default:
			ch <- answer{err: fmt.Errorf("creating a VLAN-filtering bridge: %w", err)}
		}
	}()
	a := <-ch
	if a.err != nil {
		return false, errors.Join(errors.New("bridge VLAN filtering support unknown"), a.err)
	}
	return a.ok, nil
}
