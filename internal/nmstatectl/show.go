package nmstatectl

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

type showOptions struct {
	node     nodeAddr
	stateDir string // the node runtime's record lives here
	// ifaces limits the output to these interfaces and the routes and
	// rules through them; empty = everything.
	ifaces        []string
	json          bool
	runningConfig bool
	// kernel is upstream's -k/--kernel, what this engine always does.
	kernel      bool
	showSecrets bool
}

func newShowCmd(g *globalOptions) *cobra.Command {
	o := &showOptions{}
	cmd := &cobra.Command{
		Use:     "show [IFNAME...]",
		Aliases: []string{"s"},
		Short:   "Show the current network state",
		Long: "Print the network state of the node as YAML (or JSON). With IFNAME, only those " +
			"interfaces (names, comma-separated lists or glob patterns such as 'eth*'), the routes through them and the route rules that use those " +
			"routes' tables. --running-config leaves out what is not configuration: dynamic " +
			"(DHCP/SLAAC) addresses, running routes, running DNS and LLDP neighbors.",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.node, o.stateDir = g.node(), g.stateDir
			o.ifaces = args
			return runShow(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of YAML")
	cmd.Flags().BoolVarP(&o.runningConfig, "running-config", "r", false, "show only the configuration, not dynamic state")
	cmd.Flags().BoolVarP(&o.kernel, "kernel", "k", false, "kernel only, without NetworkManager (same as --backend kernel)")
	cmd.Flags().BoolVarP(&o.showSecrets, "show-secrets", "s", false, "show secrets (passwords, keys) instead of hiding them")
	return cmd
}

func runShow(ctx context.Context, stdout io.Writer, o *showOptions) error {
	n := o.node
	if o.kernel {
		n.backend = backendKernel
	}
	b, closeB, err := openShow(ctx, n)
	if err != nil {
		return err
	}
	defer closeB()
	s, err := b.Show(ctx)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	// Interfaces the node runtime manages are reported as applied (dhcp,
	// auto-* flags), not only as "has dynamic addresses".
	if err := annotateShow(o.stateDir, s); err != nil {
		return fmt.Errorf("show: %w", err)
	}
	if o.runningConfig {
		s = runningConfig(s)
	}
	if len(o.ifaces) > 0 {
		s = onlyInterfaces(s, o.ifaces)
	}
	sortInterfaces(s)
	if !o.showSecrets {
		s = nmstate.HideSecrets(s)
	}
	enc := nmstate.EncodeYAML
	if o.json {
		enc = nmstate.EncodeJSON
	}
	out, err := enc(s)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	_, err = stdout.Write(out)
	return err
}

// sortInterfaces orders interfaces by name (then type), as nmstatectl
// show does.
func sortInterfaces(s *nmstate.State) {
	slices.SortStableFunc(s.Interfaces, func(a, b nmstate.Interface) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
}

// runningConfig drops what is reported but not configuration.
func runningConfig(s *nmstate.State) *nmstate.State {
	c := s.Clone()
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		for _, ip := range []*nmstate.IPConfig{ifc.IPv4, ifc.IPv6} {
			if ip == nil || ip.Address == nil {
				continue
			}
			ip.Address = slices.DeleteFunc(ip.Address, func(a nmstate.Address) bool { return a.IsDynamic() })
		}
		if ifc.LLDP != nil {
			ifc.LLDP.Neighbors = nil
		}
	}
	if c.Routes != nil {
		c.Routes.Running = nil
	}
	if c.DNSResolver != nil {
		c.DNSResolver.Running = nil
	}
	return c
}

// onlyInterfaces keeps the named interfaces, the routes whose next hop is
// one of them and the rules that look up those routes' tables.
func onlyInterfaces(s *nmstate.State, names []string) *nmstate.State {
	// Names may be comma-separated and may be glob patterns (eth*), as
	// nmstatectl's manual page shows them.
	var patterns []string
	for _, n := range names {
		patterns = append(patterns, strings.Split(n, ",")...)
	}
	keep := map[string]bool{}
	out := &nmstate.State{Interfaces: []nmstate.Interface{}}
	for _, i := range s.Interfaces {
		if slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, i.Name); return ok || p == i.Name }) {
			keep[i.Name] = true
			out.Interfaces = append(out.Interfaces, i)
		}
	}
	tables := map[uint32]bool{}
	via := func(rs []nmstate.Route) []nmstate.Route {
		if rs == nil {
			return nil
		}
		kept := []nmstate.Route{}
		for _, r := range rs {
			if r.NextHopInterface != nil && keep[*r.NextHopInterface] {
				kept = append(kept, r)
				t := uint32(254)
				if r.TableID != nil && *r.TableID != 0 {
					t = *r.TableID
				}
				tables[t] = true
			}
		}
		return kept
	}
	if s.Routes != nil {
		out.Routes = &nmstate.Routes{Config: via(s.Routes.Config), Running: via(s.Routes.Running)}
	}
	if s.RouteRules != nil {
		rules := []nmstate.RouteRule{}
		for _, r := range s.RouteRules.Config {
			if r.RouteTable != nil && tables[*r.RouteTable] {
				rules = append(rules, r)
			}
		}
		out.RouteRules = &nmstate.RouteRules{Config: rules}
	}
	return out
}
