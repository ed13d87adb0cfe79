package testenv

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Component names of Kill and Restart.
const (
	Etcd      = "etcd"
	APIServer = "kube-apiserver"
)

// children returns the current etcd and kube-apiserver processes.
func (e *Env) children() (etcd, apiserver *child) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.etcd, e.apiserver
}

// slot is where the child named name is kept.
func (e *Env) slot(name string) (**child, error) {
	switch name {
	case Etcd:
		return &e.etcd, nil
	case APIServer:
		return &e.apiserver, nil
	}
	return nil, fmt.Errorf("no control plane component %q (%s or %s)", name, Etcd, APIServer)
}

// Kill SIGKILLs etcd or kube-apiserver, as a crash or a lost machine
// would stop it, and returns its PID once it is reaped. Nothing restarts
// it until Restart.
func (e *Env) Kill(name string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, err := e.slot(name)
	if err != nil {
		return 0, err
	}
	if *c == nil {
		return 0, fmt.Errorf("%s is not running", name)
	}
	pid := (*c).cmd.Process.Pid
	(*c).kill()
	return pid, nil
}

// Restart starts a killed etcd or kube-apiserver again with the command
// line and data of its first start (its log continues), and waits until
// it answers: etcd healthy, the API server ready (which needs etcd).
func (e *Env) Restart(ctx context.Context, name string) error {
	if name == APIServer {
		// Its readiness needs etcd, and a start without it fails.
		for etcd, _ := e.children(); etcd.exited(); etcd, _ = e.children() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("restarting %s: etcd is down: %w", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
		if etcd, _ := e.children(); e.waitEtcd(ctx, e.etcdURL) != nil || etcd.exited() {
			return fmt.Errorf("restarting %s: etcd is not healthy", name)
		}
	}
	e.mu.Lock()
	c, err := e.slot(name)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	old := *c
	if old == nil || !old.exited() {
		e.mu.Unlock()
		return fmt.Errorf("%s: restart of a running or never started process", name)
	}
	n, err := e.spawnLog(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, old.bin, old.args...)
	if err != nil {
		e.mu.Unlock()
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	*c = n
	e.mu.Unlock()
	if name == Etcd {
		return e.waitEtcd(ctx, e.etcdURL)
	}
	return e.waitReady(ctx)
}
