package benchcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/knmstate/knmstate/pkg/nnsencoding"
)

// The large node: 1,500 VLANs and 3,000 routes.
const (
	scaleIfaces = 1500
	scaleRoutes = 3000
)

// scaleBatch is the `ip -batch` that turns a lab node into the large
// node: scaleIfaces macvlans on eth1 (named as VLANs would be: this
// kernel has no 8021q), each up with an IPv4 address, and scaleRoutes
// static routes through them.
func scaleBatch() []string {
	var lines, ups, addrs, routes []string
	for i := range scaleIfaces {
		name := fmt.Sprintf("eth1.%d", i+1)
		lines = append(lines, fmt.Sprintf("link add %s link eth1 type macvlan mode bridge", name))
		ups = append(ups, "link set "+name+" up")
		addrs = append(addrs, fmt.Sprintf("addr add 10.%d.%d.1/24 dev %s", 100+i/256, i%256, name))
	}
	for r := range scaleRoutes {
		i := r % scaleIfaces
		routes = append(routes, fmt.Sprintf("route add 172.%d.%d.0/24 via 10.%d.%d.2 dev eth1.%d proto static",
			16+r/256, r%256, 100+i/256, i%256, i+1))
	}
	return append(append(append(lines, ups...), addrs...), routes...)
}

// nnsScale is nns.scale: a 1-node lab whose node becomes the large node in
// one batch; the NNS object's size as stored (and as it would be in
// full), the time until the NNS shows the batch, and then the time an
// address change on the large node takes to show.
func nnsScale(ctx context.Context, env Env) ([]Result, error) {
	return withLab(ctx, env, "scale", 1, func(l *benchLab) ([]Result, error) {
		node := l.st.Nodes[0]
		file := filepath.Join(l.dir, "scale.batch")
		if err := os.WriteFile(file, []byte(strings.Join(scaleBatch(), "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		lastIface := fmt.Sprintf(`"eth1.%d"`, scaleIfaces)
		lastRoute := fmt.Sprintf(`"172.%d.%d.0/24"`, 16+(scaleRoutes-1)/256, (scaleRoutes-1)%256)
		start := time.Now()
		if out, err := exec.CommandContext(ctx, "ip", "-n", node.NetNS, "-batch", file).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("making %s the large node: %w: %s", node.Name, err, strings.TrimSpace(string(out)))
		}
		made := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		err := l.waitNNS(wctx, node.Name, "the large node in its NNS", func(s string) bool {
			return strings.Contains(s, lastIface) && strings.Contains(s, lastRoute)
		})
		if err != nil {
			return nil, err
		}
		reported := time.Since(made)
		env.logf("bench: nns.scale: batch of %d interfaces and %d routes took %v, in the NNS %v later",
			scaleIfaces, scaleRoutes, made.Sub(start).Round(time.Millisecond), reported.Round(time.Millisecond))
		size, err := l.nnsSize(ctx, node.Name)
		if err != nil {
			return nil, err
		}
		const mib = 1 << 20
		sizeRow := Result{Name: "nns.scale.size", Value: num(float64(size.stored) / mib), Unit: "MiB", Target: "< 1",
			Note: fmt.Sprintf("NodeNetworkState object as stored (%d bytes, encoding %q; currentState %d bytes); baseline: the same object with the full currentState (%d bytes), what upstream's format would need; "+
				"%d macvlans on eth1 stand in for VLANs (this kernel has no 8021q), %d static routes, an IPv4 address each",
				size.stored, size.encoding, size.state, size.full, scaleIfaces, scaleRoutes)}
		rows := []Result{sizeRow.withRatio(float64(size.full) / mib),
			{Name: "nns.scale.report", Value: num(reported.Seconds()), Unit: "s", Target: "-",
				Note: fmt.Sprintf("from the end of the batch that made the large node (%v) until a watch on its NNS saw the last interface and route", made.Sub(start).Round(time.Millisecond))},
		}
		lat, err := nnsScaleLatency(ctx, env, l)
		if err != nil {
			return rows, fmt.Errorf("nns.scale.latency: %w", err)
		}
		return append(rows, lat), nil
	})
}

// nnsScaleLatency is nnsLatency on the large node, on one of its 1,500
// interfaces, waiting with a watch: polling a megabyte-sized object every
// few milliseconds would load the API server the handler writes to.
func nnsScaleLatency(ctx context.Context, env Env, l *benchLab) (Result, error) {
	node := l.st.Nodes[0]
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
	const ifname = "eth1.750"
	link, err := nl.LinkByName(ifname)
	if err != nil {
		return Result{}, fmt.Errorf("node %s: %s: %w", node.Name, ifname, err)
	}
	var times []time.Duration
	for i := range env.runs(5) {
		ip := fmt.Sprintf("198.51.100.%d", 10+i)
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(ip), Mask: net.CIDRMask(32, 32)}}
		has := func(want bool) func(string) bool {
			return func(s string) bool { return strings.Contains(s, `"`+ip+`"`) == want }
		}
		if err := sleep(ctx, time.Second); err != nil { // apart from the last change
			return Result{}, err
		}
		wctx, cancel := context.WithTimeout(ctx, 70*time.Second)
		start := time.Now()
		if err := nl.AddrAdd(link, addr); err != nil {
			cancel()
			return Result{}, fmt.Errorf("adding %s to %s of %s: %w", ip, ifname, node.Name, err)
		}
		err := l.waitNNS(wctx, node.Name, "the address in the NNS", has(true))
		d := time.Since(start)
		derr := nl.AddrDel(link, addr)
		if err == nil && derr == nil {
			err = l.waitNNS(wctx, node.Name, "the address to leave the NNS", has(false))
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
	r := Result{Name: "nns.scale.latency", Value: num(medianDuration(times).Seconds()), Unit: "s", Target: "< 1",
		Note: fmt.Sprintf("on the large node: address added on %s until a watch on the NNS shows it; median of %d (runs: %s); baseline: upstream polls every 60s",
			ifname, len(times), strings.Join(samples, " "))}
	return r.withRatio(60), nil
}

// waitNNS watches a node's NNS until cond holds for its currentState
// (JSON text), or ctx ends. The watch starts with the object as it is.
func (l *benchLab) waitNNS(ctx context.Context, node, what string, cond func(state string) bool) error {
	w, err := l.dyn.Resource(nnsGVR).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
	if err != nil {
		return fmt.Errorf("watching the NNS of %s: %w", node, err)
	}
	defer func() { w.Stop() }() // the last watch
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The API server ends watches now and then: watch again.
				if w, err = l.dyn.Resource(nnsGVR).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node}); err != nil {
					return fmt.Errorf("watching the NNS of %s: %w", node, err)
				}
				continue
			}
			o, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj {
				continue
			}
			cur, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "currentState")
			if !found {
				continue
			}
			b, err := json.Marshal(cur)
			if err != nil {
				return err
			}
			if cond(string(b)) {
				return nil
			}
		}
	}
}

// nnsSizes are the byte sizes of a node's NNS object.
type nnsSizes struct {
	// stored is the object as the API server returns it (JSON).
	stored int
	// state is its currentState, as stored.
	state int
	// full is the object with the full currentState (the expansion of a
	// compact one).
	full     int
	encoding string
}

func (l *benchLab) nnsSize(ctx context.Context, node string) (nnsSizes, error) {
	o, err := l.dyn.Resource(nnsGVR).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nnsSizes{}, err
	}
	stored, err := o.MarshalJSON()
	if err != nil {
		return nnsSizes{}, err
	}
	cur, ok, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "currentState")
	if !ok {
		return nnsSizes{}, fmt.Errorf("node network state %s has no currentState", node)
	}
	state, err := json.Marshal(cur)
	if err != nil {
		return nnsSizes{}, err
	}
	full, err := nnsencoding.Expand(o.GetAnnotations(), state)
	if err != nil {
		return nnsSizes{}, err
	}
	return nnsSizes{stored: len(stored), state: len(state), full: len(stored) - len(state) + len(full),
		encoding: o.GetAnnotations()[nnsencoding.Annotation]}, nil
}
