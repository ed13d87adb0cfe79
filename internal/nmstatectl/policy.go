package nmstatectl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/pkg/nmpolicy"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// policyOptions are the inputs of `nmstatectl policy` (spec capture.md §11).
type policyOptions struct {
	policyFile     string
	currentFile    string // -c/--current; empty: live state
	capturedFile   string // -a/--captured: cache input
	outputCaptured string // -o/--output-captured: all captured states
	json           bool
}

func newPolicyCmd(g *globalOptions) *cobra.Command {
	o := &policyOptions{}
	cmd := &cobra.Command{
		Use:     "policy POLICY_FILE",
		Aliases: []string{"p"},
		Short:   "Resolve a policy (capture + desiredState) into a desired state",
		Long: "Evaluate the captures of a policy file against the current state and print its\n" +
			"desiredState with every {{ capture.NAME.PATH }} template resolved.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.policyFile = args[0]
			// Whole seconds, like the captured-states files upstream writes.
			live := func() (any, error) { return liveState(cmd.Context(), g.node()) }
			return runPolicy(o, live, time.Now().UTC().Truncate(time.Second), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.currentFile, "current", "c", "", "current state file (YAML or JSON) instead of the live state")
	f.StringVarP(&o.capturedFile, "captured", "a", "", "previously captured states to reuse instead of evaluating those captures")
	f.StringVarP(&o.outputCaptured, "output-captured", "o", "", "write all captured states to this file")
	f.BoolVar(&o.json, "json", false, "print (and write captured states) as JSON instead of YAML")
	return cmd
}

// runPolicy renders the policy. live reads the node's current state; it is
// only called when neither --current nor an embedded current state is given.
func runPolicy(o *policyOptions, live func() (any, error), now time.Time, stdout io.Writer) error {
	data, err := os.ReadFile(o.policyFile)
	if err != nil {
		return fmt.Errorf("reading policy: %w", err)
	}
	pf, err := nmpolicy.ParsePolicyFile(data)
	if err != nil {
		return fmt.Errorf("policy %s: %w", o.policyFile, err)
	}

	var cache nmpolicy.CapturedStates
	if o.capturedFile != "" {
		doc, err := readDocument(o.capturedFile)
		if err != nil {
			return fmt.Errorf("captured states: %w", err)
		}
		if cache, err = nmpolicy.ParseCapturedStates(doc); err != nil {
			return fmt.Errorf("captured states %s: %w", o.capturedFile, err)
		}
	}

	var gen nmpolicy.Generated
	var genErr error
	if len(pf.Capture) > 0 || pf.DesiredState != nil {
		current, err := o.currentState(pf, live)
		if err != nil {
			return err
		}
		gen, genErr = nmpolicy.GenerateState(pf.Policy, current, cache, now)
	}
	// Written before a template error is reported, as upstream does, so the
	// captures can be inspected.
	if o.outputCaptured != "" && (genErr == nil || gen.CapturedStates != nil) {
		if err := writeCaptured(o.outputCaptured, gen.CapturedStates, o.json); err != nil {
			return err
		}
	}
	if genErr != nil {
		return genErr
	}
	return printState(stdout, gen.DesiredState, o.json)
}

// liveState reads the node's state through the kernel backend, as the generic
// document the capture language works on.
func liveState(ctx context.Context, n nodeAddr) (any, error) {
	b, err := openKernel(ctx, n)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	st, err := b.Show(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the live state: %w", err)
	}
	data, err := nmstate.EncodeJSON(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the live state: %w", err)
	}
	return nmpolicy.DecodeDocument(data)
}

func (o *policyOptions) currentState(pf nmpolicy.PolicyFile, live func() (any, error)) (any, error) {
	if o.currentFile != "" {
		doc, err := readDocument(o.currentFile)
		if err != nil {
			return nil, fmt.Errorf("current state: %w", err)
		}
		return doc, nil
	}
	if pf.Current != nil {
		return pf.Current, nil
	}
	return live()
}

func readDocument(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := nmpolicy.DecodeDocument(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

func writeCaptured(path string, c nmpolicy.CapturedStates, asJSON bool) error {
	if c == nil {
		c = nmpolicy.CapturedStates{}
	}
	data, err := encodeDocument(c.Document(), asJSON)
	if err != nil {
		return fmt.Errorf("encoding captured states: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing captured states: %w", err)
	}
	return nil
}

// printState prints the rendered state; an empty state is an empty line.
func printState(w io.Writer, state any, asJSON bool) error {
	if m, ok := state.(map[string]any); state == nil || ok && len(m) == 0 {
		_, err := fmt.Fprintln(w)
		return err
	}
	// The rendered document must be a valid state: schema errors (unknown
	// keys, bad values) are reported here, before anything could apply it,
	// as upstream's typed rendering does. The output is the engine's
	// canonical form.
	raw, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encoding desired state: %w", err)
	}
	st, err := nmstate.Decode(raw)
	if err != nil {
		return fmt.Errorf("generated desired state: %w", err)
	}
	var data []byte
	if asJSON {
		data, err = nmstate.EncodeJSON(st)
	} else {
		data, err = nmstate.EncodeYAML(st)
	}
	if err != nil {
		return fmt.Errorf("encoding desired state: %w", err)
	}
	if asJSON && (len(data) == 0 || data[len(data)-1] != '\n') {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

func encodeDocument(doc any, asJSON bool) ([]byte, error) {
	if asJSON {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(data, '\n'), nil
	}
	return yaml.Marshal(doc)
}
