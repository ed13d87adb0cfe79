package handler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netns"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/noded"
)

// checkpointFollower is a backend that must learn about the checkpoint of
// an apply before it executes (noded.ApplyBackend: it hands the applied
// state to the node runtime after each plan).
type checkpointFollower interface {
	OnCheckpoint(context.Context, *apply.Checkpoint) error
}

// runtimeLeaseTimeout bounds a one-shot lease when no runtime runs.
const runtimeLeaseTimeout = 30 * time.Second

// lldpPoll is how often the handler's LLDP receiver re-reads which
// interfaces have lldp enabled.
const lldpPoll = 2 * time.Second

// runtimeBackend wraps the node's backend so the node runtime of
// opts.RuntimeStateDir follows policy applies: a running runtime gets the
// applied state submitted, otherwise leases are taken once; Show reports
// runtime-managed interfaces as applied (dhcp, auto-*), so a dhcp: true
// policy verifies before its lease arrives.
func runtimeBackend(b *kernel.Backend, inner apply.Backend, opts Options, log logr.Logger) (*noded.ApplyBackend, func(), error) {
	path := opts.NetNS
	switch {
	case path == "":
		path = "/proc/self/ns/net"
	case path[0] != '/':
		path = "/run/netns/" + path
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening network namespace %s for the node runtime: %w", path, err)
	}
	hostname, _ := os.Hostname()
	nopts := noded.Options{Namespace: ns, Installer: noded.KernelInstaller{B: b}, StateDir: opts.RuntimeStateDir, Hostname: hostname}
	follow := noded.DetachedFollow(nopts, runtimeLeaseTimeout, func(msg string) {
		log.Info("node runtime", "warning", msg)
	})
	// LLDP reception, also where no node runtime runs (kubelet mode); the
	// runtime's receiver and this one share the directory's lock.
	ctx, cancel := context.WithCancel(context.Background())
	lldpDone := make(chan struct{})
	go func() {
		defer close(lldpDone)
		if lock := b.LLDPLock(); lock != "" {
			noded.RunLLDP(ctx, ns, nopts.Installer, lock, lldpPoll, slog.New(logr.ToSlogHandler(log)))
		}
	}()
	stop := func() {
		cancel()
		<-lldpDone
		ns.Close()
	}
	return &noded.ApplyBackend{Inner: inner, StateDir: opts.RuntimeStateDir, Follow: follow}, stop, nil
}
