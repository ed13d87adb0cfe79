package ovs

import (
	"context"
	"time"

	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// watchColumns are the configuration columns Show reads, per table: a
// change to one of them changes the shown state. The columns ovs-vswitchd
// keeps updating (statistics, status, link state) are left out, so an
// idle node sends nothing.
var watchColumns = map[string][]string{
	"Open_vSwitch": {"bridges", "external_ids", "other_config"},
	"Bridge":       {"name", "ports", "stp_enable", "rstp_enable", "mcast_snooping_enable", "fail_mode", "datapath_type", "external_ids", "other_config"},
	"Port":         {"name", "interfaces", "tag", "vlan_mode", "trunks", "bond_mode", "lacp", "bond_updelay", "bond_downdelay", "external_ids", "other_config"},
	"Interface":    {"name", "type", "options", "external_ids", "other_config"},
}

// Watch signals on the returned channel (1-buffered, coalescing) when the
// node's state may have changed: every signal of kernel (the kernel
// backend's Watch) and every change of OVSDB's configuration, from a
// monitor on a connection of its own. While the database is not reachable
// it dials again every few seconds and signals once it connects (the OVS
// part of the state appears); a lost connection is signalled too. The
// channel is closed once ctx has ended and kernel is closed.
func (b *Backend) Watch(ctx context.Context, kernel <-chan struct{}) <-chan struct{} {
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		if b.opts.Address == NoAddress {
			return
		}
		b.monitorLoop(ctx, signal)
	}()
	go func() {
		defer close(out)
		for range kernel {
			signal()
		}
		<-monitorDone
	}()
	return out
}

// Retry intervals of the OVSDB monitor's connection.
const (
	watchRetryMin = time.Second
	watchRetryMax = 10 * time.Second
)

// monitorLoop keeps a monitor on the database until ctx ends.
func (b *Backend) monitorLoop(ctx context.Context, signal func()) {
	wait := watchRetryMin
	for {
		connected := b.monitorOnce(ctx, signal)
		if ctx.Err() != nil {
			return
		}
		if connected {
			wait = watchRetryMin
			signal() // the connection broke: OVS may be gone
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, watchRetryMax)
	}
}

// monitorOnce dials, monitors until the connection or ctx ends, and says
// whether the monitor was running.
func (b *Backend) monitorOnce(ctx context.Context, signal func()) bool {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err := ovsdb.Dial(dctx, b.opts.Address)
	cancel()
	if err != nil {
		return false
	}
	defer c.Close()
	reqs := map[string]ovsdb.MonitorRequest{}
	for table, cols := range watchColumns {
		reqs[table] = ovsdb.MonitorRequest{Columns: cols, Select: &ovsdb.MonitorSelect{Insert: true, Delete: true, Modify: true}}
	}
	if _, err := c.Monitor(ctx, dbName, "knmstate-watch", reqs, func(ovsdb.TableUpdates) { signal() }); err != nil {
		return false
	}
	// What the database holds now may differ from the last Show.
	signal()
	select {
	case <-ctx.Done():
	case <-c.Done():
	}
	return true
}
