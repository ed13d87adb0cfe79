package nmstatectl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmpolicy"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

type applyOptions struct {
	node     nodeAddr
	stateDir string
	// files are applied one after the other ("-" = stdin); each may be a
	// state or a policy (capture + desiredState), rendered against the
	// node's state right before it is applied.
	files []string
	// timeout is the checkpoint timeout in seconds (--timeout).
	timeout  int
	noVerify bool
	noCommit bool
	dryRun   bool
	// memoryOnly is nmstate's --memory-only: absent interfaces become
	// down and NetworkManager profiles stay in memory (no profile
	// deleted, gone after a reboot). Without it profiles are saved to
	// disk, as upstream's nmstatectl saves them.
	memoryOnly bool
	// persist is the former opt-in to saving profiles, now the default:
	// accepted and ignored.
	persist bool
	// kernel is upstream's -k/--kernel (kernel only, no NetworkManager):
	// what this engine always does, accepted for scripts.
	kernel bool
	// showSecrets prints the applied state's secrets instead of hiding them.
	showSecrets bool
	// reexec: see globalOptions.
	reexec []string
}

func newApplyCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:     "apply [STATE_FILE...|-]",
		Aliases: []string{"a", "set"},
		Short:   "Apply a network state",
		Long: "Apply a desired state (YAML or JSON; - or no argument = standard input) to the node: " +
			"validate, plan, write a checkpoint, execute, verify, then commit; on any failure the " +
			"previous state is restored. Several files are applied one after the other. A file may " +
			"also be a policy (capture + desiredState): it is rendered against the node's current " +
			"state first, as `nmstatectl policy` does. On each apply the " +
			"previous state is restored. With --no-commit the checkpoint stays pending: `nmstatectl " +
			"commit` keeps the change, `nmstatectl rollback` undoes it, and after --timeout seconds " +
			"a watchdog process undoes it by itself. Prints the applied state, or with --dry-run the plan.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.CalledAs() == "set" {
				fmt.Fprintln(cmd.ErrOrStderr(), "set is deprecated, use apply")
			}
			o.node, o.stateDir, o.files, o.reexec = g.node(), g.stateDir, args, g.reexec
			o.node.memoryOnly = o.memoryOnly
			if o.kernel {
				o.node.backend = backendKernel
			}
			if len(o.files) == 0 {
				o.files = []string{"-"}
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runApply(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.noVerify, "no-verify", false, "do not verify the result (an execution error still rolls back)")
	f.BoolVar(&o.noCommit, "no-commit", false, "leave the checkpoint pending for commit or rollback")
	f.IntVar(&o.timeout, "timeout", int(apply.DefaultTimeout/time.Second), "seconds until an uncommitted checkpoint rolls back")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&o.memoryOnly, "memory-only", false, "do not make the state persistent: absent interfaces become down; networkmanager backend: profiles in memory, none deleted, gone after a reboot")
	f.BoolVarP(&o.kernel, "kernel", "k", false, "kernel only, without NetworkManager (same as --backend kernel)")
	f.BoolVar(&o.persist, "persist", false, "no-op, kept for scripts: profiles are saved to disk unless --memory-only")
	f.BoolVarP(&o.showSecrets, "show-secrets", "s", false, "print secrets in the applied state instead of hiding them")
	return cmd
}

func (o *applyOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout: %d is not a positive number of seconds", o.timeout)
	}
	if !o.dryRun && o.stateDir == "" {
		return errors.New("--state-dir: required to apply")
	}
	if o.noCommit && len(o.files) > 1 {
		return errors.New("--no-commit: applies one file only (the second apply would meet the first one's pending checkpoint)")
	}
	if slices.Contains(o.files, "-") && len(o.files) > 1 {
		return errors.New("standard input (-) cannot be combined with other files")
	}
	return nil
}

func runApply(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o *applyOptions) error {
	for i, file := range o.files {
		if i > 0 {
			if _, err := io.WriteString(stdout, "---\n"); err != nil {
				return err
			}
		}
		if err := applyFile(ctx, stdin, stdout, stderr, o, file); err != nil {
			if len(o.files) > 1 {
				fmt.Fprintf(stderr, "%s: not applied (files after it neither)\n", file)
			}
			return err
		}
	}
	return nil
}

func applyFile(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, o *applyOptions, file string) error {
	data, err := readInput(stdin, file)
	if err != nil {
		return err
	}
	desired, err := desiredOf(data, func() (any, error) { return liveState(ctx, o.node) }, time.Now().UTC().Truncate(time.Second))
	if err != nil {
		return reportErrors(stderr, fmt.Errorf("%s: %w", file, err))
	}
	b, closeB, err := openNode(ctx, o.node, o.stateDir, stderr)
	if err != nil {
		return err
	}
	defer closeB()
	opts := apply.Options{
		NoVerify: o.noVerify, NoCommit: o.noCommit, DryRun: o.dryRun, MemoryOnly: o.memoryOnly,
		Timeout:  time.Duration(o.timeout) * time.Second,
		StateDir: o.stateDir,
		NetNS:    o.node.netns, ResolvConf: o.node.resolvConf, UTSNS: o.node.utsNS, OVSDB: o.node.ovsdb,
		OnCheckpoint: func(ctx context.Context, rec *apply.Checkpoint) error {
			if err := b.OnCheckpoint(ctx, rec); err != nil {
				return err
			}
			return startWatchdog(o.reexec, o.stateDir, rec.ID)
		},
	}
	res, err := apply.Apply(ctx, b, desired, opts)
	var failure *apply.Failure
	if errors.As(err, &failure) {
		// Printed whole: what failed, then how the rollback went.
		return err
	}
	if err != nil {
		return reportErrors(stderr, err)
	}
	if o.dryRun {
		_, err = io.WriteString(stdout, res.Plan.String())
		return err
	}
	shown := res.Desired
	if !o.showSecrets {
		shown = nmstate.HideSecrets(shown)
	}
	out, err := nmstate.EncodeYAML(shown)
	if err != nil {
		return fmt.Errorf("printing the applied state: %w", err)
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if res.Checkpoint != "" && !res.Committed {
		fmt.Fprintf(stderr, "checkpoint %s is pending: commit it before %s or it rolls back\n",
			res.Checkpoint, res.Deadline.UTC().Format(time.RFC3339))
	}
	return nil
}

// readInput reads a file, or standard input for "-".
func readInput(stdin io.Reader, file string) ([]byte, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	return data, nil
}

// desiredOf decodes a state document, or renders a policy document
// (top-level capture, desiredState or desired) against its embedded
// current state, else the node's (live), as upstream's apply accepts both.
func desiredOf(data []byte, live func() (any, error), now time.Time) (*nmstate.State, error) {
	if !isPolicy(data) {
		return nmstate.Decode(data)
	}
	pf, err := nmpolicy.ParsePolicyFile(data)
	if err != nil {
		return nil, err
	}
	if pf.DesiredState == nil {
		return &nmstate.State{}, nil
	}
	current := pf.Current
	if current == nil {
		if current, err = live(); err != nil {
			return nil, err
		}
	}
	gen, err := nmpolicy.GenerateState(pf.Policy, current, nil, now)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(gen.DesiredState)
	if err != nil {
		return nil, fmt.Errorf("encoding the rendered policy: %w", err)
	}
	return nmstate.Decode(raw)
}

// isPolicy reports whether a document is a policy: a mapping with a
// top-level capture, desiredState or desired key (no state has those).
func isPolicy(data []byte) bool {
	var top map[string]json.RawMessage
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false
	}
	for _, k := range []string{"capture", "desiredState", "desired"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}
