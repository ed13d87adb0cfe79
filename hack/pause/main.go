// Command pause is the lab's pause container, what registry.k8s.io/pause
// is to a cluster on the Internet (the lab has no Internet): the process
// that holds a pod's namespaces. As pid 1 of the pod's PID namespace it
// reaps the zombies orphaned to it, and it exits 0 on SIGTERM or SIGINT.
// It lives in hack/ because only the lab needs it; `make images` builds
// it into the pause image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		// The kubelet passes none (Kubernetes' pause knows only -v).
		fmt.Fprintln(os.Stderr, "pause: takes no arguments")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited; SIGCHLD signals merge, so one
// delivery may stand for several.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
