package benchcmd

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// nnsIdleWindow is how long nns.idle watches a quiet lab.
const nnsIdleWindow = time.Minute

// nnsSettle lets the start-up writes and the first DHCP exchanges pass
// before the idle window begins.
const nnsSettle = 5 * time.Second

// nnsIdle is nns.idle on a 3-node lab: NNS writes, and processes forked
// by the handlers and node runtimes, per node and minute while nothing
// changes; then the time an address added on a node takes to appear in
// its NNS.
func nnsIdle(ctx context.Context, env Env) ([]Result, error) {
	const nodes = 3
	return withLab(ctx, env, "nns", nodes, func(l *benchLab) ([]Result, error) {
		if err := sleep(ctx, nnsSettle); err != nil {
			return nil, err
		}
		pids, err := l.handlerPIDs()
		if err != nil {
			return nil, err
		}
		// The node runtimes count too: upstream's forks come from the
		// handler running nmstatectl, ours could come from either.
		var roots []int
		for node, p := range pids {
			roots = append(roots, p)
			if rt, err := l.processPID("noded/" + node); err == nil {
				roots = append(roots, rt)
			}
		}
		fc, err := newForkCounter(roots)
		if err != nil {
			return nil, err
		}
		before, err := l.apiWrites(ctx)
		if err != nil {
			_, _, _ = fc.stop()
			return nil, err
		}
		changes, err := watchNNSChanges(ctx, l)
		if err != nil {
			_, _, _ = fc.stop()
			return nil, err
		}
		env.logf("bench: nns.idle: watching %d handler and node runtime processes for %v", len(roots), nnsIdleWindow)
		start := time.Now()
		serr := sleep(ctx, nnsIdleWindow)
		forks, lost, ferr := fc.stop()
		elapsed := time.Since(start)
		changed := changes.stop()
		if serr != nil {
			return nil, serr
		}
		if ferr != nil {
			return nil, ferr
		}
		after, err := l.apiWrites(ctx)
		if err != nil {
			return nil, err
		}
		// Restarted handlers would have escaped the fork count.
		if now, err := l.handlerPIDs(); err != nil || fmt.Sprint(now) != fmt.Sprint(pids) {
			return nil, fmt.Errorf("handlers restarted during the idle window (%v, then %v): see %s", pids, now, l.dir)
		}
		if changed == "" {
			changed = "none"
		}
		perNodeMin := func(n float64) float64 { return n / nodes / elapsed.Minutes() }
		writes := sumWrites(after, isNNS) - sumWrites(before, isNNS)
		forkNote := fmt.Sprintf("processes created by the handlers and node runtimes (%d processes) and their descendants (kernel process events connector)", len(roots))
		if lost > 0 {
			forkNote += fmt.Sprintf("; the kernel dropped events %d times: a lower bound", lost)
		}
		rows := []Result{
			{Name: "nns.idle.writes", Value: num(perNodeMin(writes)), Unit: "writes/node/min", Target: "0",
				Note: fmt.Sprintf("NNS write requests at the API server over %v idle, %d nodes; reported state changes seen: %s",
					elapsed.Round(time.Second), nodes, changed)},
			{Name: "nns.idle.forks", Value: num(perNodeMin(float64(forks))), Unit: "forks/node/min", Target: "0", Note: forkNote},
		}
		lat, err := nnsLatency(ctx, env, l)
		if err != nil {
			return rows, fmt.Errorf("nns.idle.latency: %w", err)
		}
		return append(rows, lat), nil
	})
}

// nnsLatency adds an address to eth1 of the last node, times until its
// NNS shows it, and removes it again (untimed), env.runs(5) times.
func nnsLatency(ctx context.Context, env Env, l *benchLab) (Result, error) {
	node := l.st.Nodes[len(l.st.Nodes)-1]
	h, err := netns.GetFromName(node.NetNS)
	if err != nil {
		return Result{}, fmt.Errorf("node %s namespace: %w", node.Name, err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return Result{}, err
	}
	defer nl.Close()
	link, err := nl.LinkByName("eth1")
	if err != nil {
		return Result{}, fmt.Errorf("node %s: eth1: %w", node.Name, err)
	}
	var times []time.Duration
	for i := range env.runs(5) {
		ip := fmt.Sprintf("198.51.100.%d", 10+i)
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(ip), Mask: net.CIDRMask(32, 32)}}
		shows := func(want bool) func() (bool, error) {
			return func() (bool, error) {
				s, err := l.nnsText(ctx, node.Name)
				return strings.Contains(s, `"`+ip+`"`) == want, err
			}
		}
		if err := sleep(ctx, time.Second); err != nil { // apart from the last change
			return Result{}, err
		}
		wctx, cancel := context.WithTimeout(ctx, 70*time.Second)
		start := time.Now()
		if err := nl.AddrAdd(link, addr); err != nil {
			cancel()
			return Result{}, fmt.Errorf("adding %s to eth1 of %s: %w", ip, node.Name, err)
		}
		err := waitFor(wctx, 2*time.Millisecond, "the address in the NNS", shows(true))
		d := time.Since(start)
		derr := nl.AddrDel(link, addr)
		if err == nil && derr == nil {
			err = waitFor(wctx, 10*time.Millisecond, "the address to leave the NNS", shows(false))
		}
		cancel()
		if err != nil || derr != nil {
			return Result{}, fmt.Errorf("%v %v", err, derr)
		}
		times = append(times, d)
	}
	var samples []string
	for _, d := range times {
		samples = append(samples, d.Round(time.Millisecond).String())
	}
	r := Result{Name: "nns.idle.latency", Value: num(medianDuration(times).Seconds()), Unit: "s", Target: "< 1",
		Note: fmt.Sprintf("address added on eth1 of %s until its NNS shows it (polled every 2ms); median of %d (runs: %s); baseline: upstream polls every 60s",
			node.Name, len(times), strings.Join(samples, " "))}
	return r.withRatio(60), nil
}
