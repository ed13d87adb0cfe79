package probe

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// inNetNS runs f on a locked OS thread inside the network namespace path
// ("" = the process's own, no switch). Sockets f creates belong to that
// namespace whatever thread uses them later. A thread that cannot be
// switched back stays locked, so the runtime discards it.
func inNetNS(path string, f func() error) error {
	if path == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean := false
		defer func() {
			if clean {
				runtime.UnlockOSThread()
			}
		}()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("reading the thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(nsFile(path))
		if err != nil {
			clean = true
			errc <- fmt.Errorf("opening network namespace %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			clean = netns.Set(orig) == nil
			errc <- fmt.Errorf("entering network namespace %s: %w", path, err)
			return
		}
		ferr := f()
		clean = netns.Set(orig) == nil
		errc <- ferr
	}()
	return <-errc
}

// nsFile turns a namespace name into a path, as the kernel backend does.
func nsFile(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "/run/netns/" + name
}
