package nmstatectl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

type statisticOptions struct {
	node     nodeAddr
	stateDir string
	files    []string // "-" = stdin
	// currentFile is -c/--current; empty: the live state of the node.
	currentFile string
	json        bool
}

func newStatisticCmd(g *globalOptions) *cobra.Command {
	o := &statisticOptions{}
	cmd := &cobra.Command{
		Use:     "statistic [STATE_FILE...]",
		Aliases: []string{"st"},
		Short:   "Show the nmstate features and interface stacks a desired state uses",
		Long: "Print the topology (interface stacks such as \"static_ip4 -> vlan -> bond -> ethernet\") " +
			"and the nmstate feature names (sorted) of a desired state, as applied on the current state: " +
			"the live state of the node, or the file given with --current. Several STATE_FILEs are " +
			"folded into one desired state in order (a later file's interface replaces an earlier one " +
			"of that name; an absent one removes it and the interfaces on top of it). No STATE_FILE " +
			"or - reads standard input.",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.node, o.stateDir, o.files = g.node(), g.stateDir, args
			if len(o.files) == 0 {
				o.files = []string{"-"}
			}
			live := func() (*nmstate.State, error) { return liveRunningConfig(cmd.Context(), o.node, o.stateDir) }
			return runStatistic(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, live)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.currentFile, "current", "c", "", "current state file (YAML or JSON) instead of the live state")
	f.BoolVar(&o.json, "json", false, "print JSON instead of YAML")
	return cmd
}

// statisticOutput fixes the key order of the printed document (topology
// first, as upstream prints it).
type statisticOutput struct {
	Topology []string `yaml:"topology" json:"topology"`
	Features []string `yaml:"features" json:"features"`
}

// runStatistic prints the statistic of the desired files. live reads the
// node's current state; it is only called without --current.
func runStatistic(stdin io.Reader, stdout, stderr io.Writer, o *statisticOptions, live func() (*nmstate.State, error)) error {
	desired := &nmstate.State{}
	for _, f := range o.files {
		s, err := readState(stdin, stderr, f)
		if err != nil {
			return err
		}
		desired = foldDesired(desired, s)
	}
	var current *nmstate.State
	var err error
	if o.currentFile != "" {
		if current, err = readState(stdin, stderr, o.currentFile); err != nil {
			return err
		}
	} else if current, err = live(); err != nil {
		return err
	}
	stat, err := nmstate.Statistic(desired, current)
	if err != nil {
		return reportErrors(stderr, err)
	}
	out := statisticOutput{Topology: stat.Topology, Features: stat.Features}
	var buf bytes.Buffer
	if o.json {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "a -> b", not "a -\u003e b"
		err = enc.Encode(out)
	} else {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err = enc.Encode(out); err == nil {
			err = enc.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("encoding statistic: %w", err)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}

// liveRunningConfig reads the node's configuration (no dynamic addresses,
// routes or DNS), the current state upstream compares against.
func liveRunningConfig(ctx context.Context, n nodeAddr, stateDir string) (*nmstate.State, error) {
	b, err := openKernel(ctx, n)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	s, err := b.Show(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the live state: %w", err)
	}
	if err := annotateShow(stateDir, s); err != nil {
		return nil, fmt.Errorf("reading the live state: %w", err)
	}
	return runningConfig(s), nil
}

// foldDesired folds a later desired state into an earlier one. Sections the
// later state gives replace the earlier ones; its interfaces replace the
// earlier interface of the same name (kernel and user-space names are
// apart) or are added. An absent interface instead removes the earlier
// one, the ports it lists and, for a kernel interface, the interfaces on
// top of it (VLANs and the like): they would be gone after both applies.
func foldDesired(acc, next *nmstate.State) *nmstate.State {
	out := *acc
	if next.Hostname != nil {
		out.Hostname = next.Hostname
	}
	if next.DNSResolver != nil {
		out.DNSResolver = next.DNSResolver
	}
	if next.RouteRules != nil {
		out.RouteRules = next.RouteRules
	}
	if next.Routes != nil {
		out.Routes = next.Routes
	}
	if next.OVSDB != nil {
		out.OVSDB = next.OVSDB
	}
	if next.OVN != nil {
		out.OVN = next.OVN
	}
	if next.Description != nil {
		out.Description = next.Description
	}
	if next.Interfaces == nil {
		return &out
	}

	type key struct {
		name      string
		userSpace bool
	}
	keyOf := func(i *nmstate.Interface) key { return key{i.Name, i.Type.IsUserSpace()} }
	ifaces := append([]nmstate.Interface{}, acc.Interfaces...)
	remove := func(drop func(*nmstate.Interface) bool) {
		kept := ifaces[:0]
		for i := range ifaces {
			if !drop(&ifaces[i]) {
				kept = append(kept, ifaces[i])
			}
		}
		ifaces = kept
	}
	for i := range next.Interfaces {
		n := &next.Interfaces[i]
		k := keyOf(n)
		if n.State == nmstate.StateAbsent {
			ports, _ := n.Ports()
			remove(func(x *nmstate.Interface) bool {
				if keyOf(x) == k || !x.Type.IsUserSpace() && slices.Contains(ports, x.Name) {
					return true
				}
				return !k.userSpace && x.Parent() == n.Name
			})
			continue
		}
		replaced := false
		for j := range ifaces {
			if keyOf(&ifaces[j]) == k {
				ifaces[j], replaced = *n, true
				break
			}
		}
		if !replaced {
			ifaces = append(ifaces, *n)
		}
	}
	out.Interfaces = ifaces
	return &out
}
