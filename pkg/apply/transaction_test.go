package apply

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
	"github.com/knmstate/knmstate/pkg/probe"
)

// fakeProbe is a probe of the fake node: it fails while fails says so of
// the node's state.
type fakeProbe struct {
	name     string
	external bool
	fails    func(s *nmstate.State) bool
}

// hasIface fails a probe while the node has the interface (a change that
// cuts the node off).
func hasIface(name string) func(*nmstate.State) bool {
	return func(s *nmstate.State) bool { return s.FindTyped(name, "") != nil }
}

func always(*nmstate.State) bool { return true }

// txSummary is what a transaction decided, in comparable form.
type txSummary struct {
	// Node is the node's interfaces afterwards; Record whether a
	// checkpoint record is left.
	Node   map[string]string
	Record bool
	// Pending reports a pending checkpoint rolled back first.
	Pending bool
	// Selected are the probes run after the change; RanAfter those that
	// ran after BeforeProbes (each once however often it was attempted).
	Selected []string
	RanAfter []string
	// Applied reports an apply result; Revert is its revert state.
	Applied bool
	Revert  []string
	Refused bool
	Probe   string
	// Committed is the transaction's and the apply result's.
	Committed bool
	// Err is "" or the error; a *Failure is "rolled back: " and its Err
	// when its rollback worked.
	Err string
}

func revertLines(s *nmstate.State) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, i := range s.Interfaces {
		out = append(out, i.Name+" "+string(i.State))
	}
	sort.Strings(out)
	return out
}

func errSummary(err error) string {
	var f *Failure
	switch {
	case err == nil:
		return ""
	case errors.As(err, &f) && f.Rollback == nil:
		return "rolled back: " + f.Err.Error()
	}
	return err.Error()
}

func TestTransactDecisions(t *testing.T) {
	eth1 := func() *fakeNode { return newNode(st.Ethernet("eth1", st.MTU(1500))) }
	br0 := st.State(st.Interfaces(st.LinuxBridge("br0", st.MTU(1400))))
	errRecord := errors.New("recording the revert state: disk full")
	for _, tc := range []struct {
		name    string
		node    *fakeNode
		desired *nmstate.State
		// pending leaves eth1 at mtu 9000 under an uncommitted checkpoint
		// first (an interrupted earlier run).
		pending      bool
		probes       []fakeProbe
		beforeCommit error
		// cancel ends the caller's context during the probes.
		cancel bool
		want   txSummary
	}{{
		name:    "probes pass: commit",
		node:    eth1(),
		desired: br0,
		probes:  []fakeProbe{{name: "ping", external: true, fails: hasIface("nothing")}, {name: "api-server", fails: hasIface("nothing")}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500", "br0": "linux-bridge mtu 1400"},
			Selected: []string{"ping", "api-server"}, RanAfter: []string{"ping", "api-server"},
			Applied: true, Revert: []string{"br0 absent"}, Committed: true,
		},
	}, {
		name:    "probe fails: roll back, name the probe, keep the revert state",
		node:    eth1(),
		desired: br0,
		probes:  []fakeProbe{{name: "ping", external: true, fails: hasIface("br0")}, {name: "api-server", fails: hasIface("nothing")}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"ping", "api-server"}, RanAfter: []string{"ping"},
			Applied: true, Revert: []string{"br0 absent"}, Refused: true, Probe: "ping",
			Err: "rolled back: probe ping: br0 cuts the node off",
		},
	}, {
		name:    "an internal probe that fails is blamed too",
		node:    eth1(),
		desired: br0,
		probes:  []fakeProbe{{name: "api-server", fails: hasIface("br0")}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"api-server"}, RanAfter: []string{"api-server"},
			Applied: true, Revert: []string{"br0 absent"}, Refused: true, Probe: "api-server",
			Err: "rolled back: probe api-server: br0 cuts the node off",
		},
	}, {
		name:    "external probe failing before the change is not run after it",
		node:    eth1(),
		desired: br0,
		probes:  []fakeProbe{{name: "ping", external: true, fails: always}, {name: "dns", external: true, fails: hasIface("nothing")}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500", "br0": "linux-bridge mtu 1400"},
			Selected: []string{"dns"}, RanAfter: []string{"dns"},
			Applied: true, Revert: []string{"br0 absent"}, Committed: true,
		},
	}, {
		name:         "BeforeCommit fails: roll back, no probe to blame",
		node:         eth1(),
		desired:      br0,
		probes:       []fakeProbe{{name: "ping", external: true, fails: hasIface("nothing")}},
		beforeCommit: errRecord,
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"ping"}, RanAfter: []string{"ping"},
			Applied: true, Revert: []string{"br0 absent"}, Refused: true,
			Err: "rolled back: " + errRecord.Error(),
		},
	}, {
		name:    "caller gives up during the probes: still rolled back",
		node:    eth1(),
		desired: br0,
		probes:  []fakeProbe{{name: "api-server", fails: hasIface("br0")}},
		cancel:  true,
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"api-server"}, RanAfter: []string{"api-server"},
			Applied: true, Revert: []string{"br0 absent"}, Refused: true, Probe: "api-server",
			Err: "rolled back: probe api-server: br0 cuts the node off",
		},
	}, {
		name:    "apply fails: nothing to probe or commit",
		node:    &fakeNode{state: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))), failAt: 1},
		desired: br0,
		probes:  []fakeProbe{{name: "ping", external: true, fails: hasIface("nothing")}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"ping"},
			Err:      "rolled back: link add br0 type linux-bridge mtu 1400: injected failure",
		},
	}, {
		name:    "nothing to apply: no checkpoint, no probe after",
		node:    eth1(),
		desired: &nmstate.State{},
		probes:  []fakeProbe{{name: "ping", external: true, fails: always}, {name: "api-server", fails: always}},
		want: txSummary{
			Node:     map[string]string{"eth1": "ethernet mtu 1500"},
			Selected: []string{"api-server"}, Applied: true,
		},
	}, {
		name:    "pending checkpoint: rolled back before the apply",
		node:    eth1(),
		desired: br0,
		pending: true,
		probes:  []fakeProbe{{name: "ping", external: true, fails: hasIface("nothing")}},
		want: txSummary{
			Node:    map[string]string{"eth1": "ethernet mtu 1500", "br0": "linux-bridge mtu 1400"},
			Pending: true, Selected: []string{"ping"}, RanAfter: []string{"ping"},
			Applied: true, Revert: []string{"br0 absent"}, Committed: true,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := TxOptions{Options: testOptions(t), ProbeInterval: time.Millisecond, ProbeSelectTimeout: time.Millisecond}
			if tc.pending {
				po := o.Options
				po.NoCommit = true
				if _, err := Apply(ctx, tc.node, st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), po); err != nil {
					t.Fatalf("pending Apply: %v", err)
				}
			}
			after := false
			var ranAfter []string
			for _, p := range tc.probes {
				p := p
				o.Probes = append(o.Probes, probe.Probe{Name: p.name, External: p.external, Timeout: 5 * time.Millisecond,
					Attempt: func(context.Context) error {
						if after && (len(ranAfter) == 0 || ranAfter[len(ranAfter)-1] != p.name) {
							ranAfter = append(ranAfter, p.name)
						}
						if !p.fails(tc.node.state) {
							return nil
						}
						if tc.cancel {
							cancel()
						}
						return errors.New("br0 cuts the node off")
					}})
			}
			o.BeforeProbes = func(context.Context, *TxResult) { after = true }
			o.BeforeCommit = func(context.Context, *TxResult) error { return tc.beforeCommit }

			tx, err := Transact(ctx, tc.node, tc.desired, o)
			if tx == nil {
				t.Fatalf("Transact returned no result (error %v)", err)
			}
			_, recErr := ReadCheckpoint(o.StateDir)
			got := txSummary{
				Node: names(tc.node.state), Record: recErr == nil, Pending: tx.Pending != "",
				RanAfter: ranAfter, Applied: tx.Apply != nil, Refused: tx.Refused, Probe: tx.Probe,
				Committed: tx.Committed, Err: errSummary(err),
			}
			for _, p := range tx.Probes {
				got.Selected = append(got.Selected, p.Name)
			}
			if tx.Apply != nil {
				got.Revert = revertLines(tx.Apply.Revert)
				if tx.Apply.Committed != tx.Committed {
					t.Errorf("apply result committed=%v, transaction committed=%v", tx.Apply.Committed, tx.Committed)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("transaction (-want +got):\n%s", diff)
			}
			if tx.PendingErr != nil {
				t.Errorf("rolling back the pending checkpoint: %v", tx.PendingErr)
			}
		})
	}
}

// After a rollback the probes run again until they pass, so that a retry
// selects them again; a probe still failing is reported, not an error of
// the transaction's own.
func TestTransactSettlesAfterRollback(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fails       func(*nmstate.State) bool
		wantSettled bool
	}{
		{"node recovers", hasIface("br0"), true},
		{"node stays cut off", always, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode(st.Ethernet("eth1", st.MTU(1500)))
			// Before the change the probe passes, whatever the case says.
			after := false
			o := TxOptions{Options: testOptions(t), ProbeInterval: time.Millisecond, SettleAfterRollback: true,
				Probes: []probe.Probe{{Name: "ping", External: true, Timeout: 5 * time.Millisecond, Attempt: func(context.Context) error {
					if after && tc.fails(node.state) {
						return errors.New("unreachable")
					}
					return nil
				}}},
				BeforeProbes: func(context.Context, *TxResult) { after = true },
			}
			tx, err := Transact(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0"))), o)
			var f *Failure
			if !errors.As(err, &f) || f.Rollback != nil || !tx.Refused {
				t.Fatalf("Transact = %+v, %v; want refused and rolled back", tx, err)
			}
			if settled := tx.SettleErr == nil; settled != tc.wantSettled {
				t.Errorf("settled = %v (%v), want %v", settled, tx.SettleErr, tc.wantSettled)
			}
		})
	}
}

func TestTransactRefusesDryRun(t *testing.T) {
	o := TxOptions{Options: testOptions(t)}
	o.DryRun = true
	node := newNode(st.Ethernet("eth1", st.MTU(1500)))
	if _, err := Transact(context.Background(), node, st.State(st.Interfaces(st.LinuxBridge("br0"))), o); err == nil {
		t.Fatal("Transact with DryRun succeeded")
	}
	if len(node.executed) != 0 {
		t.Errorf("executed %v", node.executed)
	}
}
