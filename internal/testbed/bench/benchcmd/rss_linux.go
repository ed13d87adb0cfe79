package benchcmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

const (
	mib = 1 << 20
	// upstreamHandlerMiB is the upstream handler's RSS the issue quotes
	// (its nmstatectl processes come on top).
	upstreamHandlerMiB = 22
	dhcpInterfaces     = 10
)

// handlerRSS is handler.rss on a 1-node lab: the handler's RSS idle, then
// with 10 more interfaces configured by DHCP (leases from the lab's
// dnsmasq, held by the node runtime, reported by the handler).
func handlerRSS(ctx context.Context, env Env) ([]Result, error) {
	return withLab(ctx, env, "rss", 1, func(l *benchLab) ([]Result, error) {
		node := l.st.Nodes[0]
		if err := sleep(ctx, nnsSettle); err != nil {
			return nil, err
		}
		pids, err := l.handlerPIDs()
		if err != nil {
			return nil, err
		}
		pid := pids[node.Name]
		idle, err := rssOf(pid)
		if err != nil {
			return nil, err
		}
		rows := []Result{Result{Name: "handler.rss.idle", Value: num(idle.Total / mib), Unit: "MiB", Target: "-",
			Note: "VmRSS of the handler of a 1-node lab, " + idle.note() + "; baseline: upstream handler"}.withRatio(upstreamHandlerMiB)}

		if err := addDHCPInterfaces(ctx, env, l); err != nil {
			return rows, err
		}
		// The NNS shows every lease before the figure is taken.
		last := fmt.Sprintf("dhcp%d", dhcpInterfaces-1)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = waitFor(wctx, 100*time.Millisecond, "the leases in the NNS", func() (bool, error) {
			s, err := l.nnsText(wctx, node.Name)
			return err == nil && strings.Contains(s, `"`+last+`"`) && leasesDone(node.NetNS) == nil, nil
		})
		cancel()
		if err != nil {
			return rows, fmt.Errorf("%w (%v)", err, leasesDone(node.NetNS))
		}
		if err := sleep(ctx, nnsSettle); err != nil {
			return rows, err
		}
		busy, err := rssOf(pid)
		if err != nil {
			return rows, err
		}
		rows = append(rows, Result{Name: "handler.rss.dhcp10", Value: num(busy.Total / mib), Unit: "MiB", Target: "-",
			Note: "the handler with 10 more DHCP interfaces in its NNS, " + busy.note() + "; baseline: upstream handler"}.withRatio(upstreamHandlerMiB))
		if rpid, err := l.processPID("noded/" + node.Name); err == nil {
			if rt, err := rssOf(rpid); err == nil {
				rows = append(rows, Result{Name: "noded.rss.dhcp10", Value: num(rt.Total / mib), Unit: "MiB", Target: "-",
					Note: "the node runtime (nmstatectl service) holding the 11 DHCP leases, " + rt.note() + ": NetworkManager's part upstream"})
			}
		}
		return rows, nil
	})
}

// addDHCPInterfaces gives the node NICs dhcp0..dhcp9 on the lab's switch
// and has its node runtime configure them by DHCPv4 (nmstatectl apply on
// the runtime's state directory, which the runtime follows).
func addDHCPInterfaces(ctx context.Context, env Env, l *benchLab) error {
	node := l.st.Nodes[0]
	var b strings.Builder
	b.WriteString("interfaces:\n")
	for i := range dhcpInterfaces {
		peer := fmt.Sprintf("kbd-%d", i)
		name := fmt.Sprintf("dhcp%d", i)
		for _, args := range [][]string{
			{"-n", l.st.SwitchNS, "link", "add", peer, "type", "veth", "peer", "name", name, "netns", node.NetNS},
			{"-n", l.st.SwitchNS, "link", "set", peer, "master", "br0", "up"},
		} {
			if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
		}
		fmt.Fprintf(&b, "- name: %s\n  type: ethernet\n  state: up\n  ipv4: {enabled: true, dhcp: true}\n  ipv6: {enabled: false}\n", name)
	}
	file := filepath.Join(l.dir, "dhcp10.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return err
	}
	// knmstate carries nmstatectl; the runtime follows its state dir.
	args := []string{"nmstatectl", "--netns", node.NetNS, "--resolv-conf", node.ResolvConf,
		"--state-dir", node.RuntimeStateDir, "-q", "apply", file}
	if out, err := exec.CommandContext(ctx, env.Binary, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("knmstate %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// leasesDone returns nil once every dhcpN interface of the node has an
// IPv4 address.
func leasesDone(nsName string) error {
	h, err := netns.GetFromName(nsName)
	if err != nil {
		return err
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return err
	}
	defer nl.Close()
	var missing []string
	for i := range dhcpInterfaces {
		name := fmt.Sprintf("dhcp%d", i)
		link, err := nl.LinkByName(name)
		if err != nil {
			return err
		}
		addrs, err := nl.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(addrs) == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no DHCP lease yet on %s", strings.Join(missing, ", "))
	}
	return nil
}
