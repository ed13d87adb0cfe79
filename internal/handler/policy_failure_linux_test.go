package handler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// history records every version of one enactment the API server shows,
// from its creation on.
type history struct {
	mu   sync.Mutex
	seen []enactment
}

func (n *polNode) record(t *testing.T, policy string) *history {
	t.Helper()
	w, err := n.c.Watch(context.Background(), &enactmentList{}, client.MatchingLabels{shared.EnactmentNodeLabel: n.name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &history{}
	done := make(chan struct{})
	t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if e, ok := ev.Object.(*enactment); ok && e.Name == shared.EnactmentName(n.name, policy) {
				h.mu.Lock()
				h.seen = append(h.seen, *e)
				h.mu.Unlock()
			}
		}
	}()
	return h
}

// phases lists the distinct consecutive phases seen for gen.
func (h *history) phases(gen int64) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for i := range h.seen {
		p := phaseOf(&h.seen[i].Status, gen).String()
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

func (h *history) find(ok func(*enactment) bool) *enactment {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.seen {
		if ok(&h.seen[i]) {
			return &h.seen[i]
		}
	}
	return nil
}

func TestPolicyInvalidStateFailsAtOnce(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-invalid", ns.Path, map[string]string{"pol-invalid": "yes"})
	n.start(t, nil)
	h := n.record(t, "pol-invalid")
	p := n.createPolicy(t, "pol-invalid", "interfaces:\n- name: eth1\n  type: veth\n  state: bogus\n", map[string]string{"pol-invalid": "yes"}, nil)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	c := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing)
	if c.Reason != shared.NodeNetworkConfigurationEnactmentConditionFailedToConfigure ||
		!strings.HasPrefix(c.Message, "failure generating desiredState and capturedStates: ") ||
		!strings.Contains(c.Message, "interfaces[0].state") {
		t.Errorf("Failing = %+v, want FailedToConfigure with the generation failure naming interfaces[0].state", c)
	}
	if got := n.applies.Load(); got != 0 {
		t.Errorf("%d applies of an invalid state", got)
	}
	if h.find(phaseIs(1, phasePending)) != nil {
		t.Errorf("asked for a permit for an invalid state; phases %v", h.phases(1))
	}
}

func TestPolicyApplyFailureRetriesThenFails(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-retry", ns.Path, map[string]string{"pol-retry": "yes"})
	m := newTestMetrics(t)
	n.start(t, func(o *PolicyOptions) { o.MaxRetries = 3; o.Metrics = m.Handler })
	h := n.record(t, "pol-retry")
	// eth9 does not exist and an ethernet cannot be created: every apply
	// fails.
	p := n.createPolicy(t, "pol-retry", "interfaces:\n- name: eth9\n  type: ethernet\n  state: up\n", map[string]string{"pol-retry": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	if got := e.Status.RetryCount["1"]; got != 3 {
		t.Errorf("retryCount[1] = %d, want 3", got)
	}
	if got := n.applies.Load(); got != 3 {
		t.Errorf("%d applies, want 3", got)
	}
	for _, want := range []string{"Retrying 1/3", "Retrying 2/3"} {
		r := h.find(func(e *enactment) bool {
			return phaseOf(&e.Status, 1) == phaseRetrying &&
				strings.HasSuffix(condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message, want)
		})
		if r == nil {
			t.Errorf("no Retrying enactment ending %q; phases %v", want, h.phases(1))
			continue
		}
		if c := condition(r, shared.NodeNetworkConfigurationEnactmentConditionProgressing); c.Reason != shared.NodeNetworkConfigurationEnactmentConditionRetrying || !strings.HasSuffix(c.Message, want) {
			t.Errorf("Retrying Progressing = %+v", c)
		}
	}
	if c := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing); c.Reason != shared.NodeNetworkConfigurationEnactmentConditionFailedToConfigure || !strings.Contains(c.Message, "eth9") {
		t.Errorf("Failing = %+v, want FailedToConfigure naming eth9", c)
	}
	ev := waitWarning(t, n.c, p.Name, "ReconcileFailed")
	if want := `reconciliation of enactment "pol-retry.pol-retry" has failed after 3 retries`; ev.Note != want {
		t.Errorf("event note %q, want %q", ev.Note, want)
	}
	// An ethernet that does not exist fails before anything changes:
	// three failed applies, nothing rolled back.
	if got := m.value(t, "knmstate_handler_apply_duration_seconds", "node", n.name, "result", "failed"); got != 3 {
		t.Errorf("%v failed applies, want 3", got)
	}
	if got := m.value(t, "knmstate_handler_rollbacks_total"); got != 0 {
		t.Errorf("%v rollbacks, want 0", got)
	}
	if e.Annotations[rollout.PermitAnnotation] != "1" {
		t.Errorf("permit annotation lost")
	}
}

func TestPolicyAbort(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-abort", ns.Path, map[string]string{"pol-abort": "yes"})
	n.start(t, nil)
	p := n.createPolicy(t, "pol-abort", staticAddr("lo", "198.51.100.40/32"), map[string]string{"pol-abort": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.annotate(t, p.Name, rollout.AbortAnnotation, 1)
	e := n.waitEnactment(t, p.Name, "Aborted", phaseIs(1, phaseAborted))
	c := condition(e, shared.NodeNetworkConfigurationEnactmentConditionAborted)
	want := `reconciliation of enactment "pol-abort.pol-abort" has aborted`
	if c.Reason != shared.NodeNetworkConfigurationEnactmentConditionConfigurationAborted || c.Message != want {
		t.Errorf("Aborted = %+v, want ConfigurationAborted %q", c, want)
	}
	ev := waitWarning(t, n.c, p.Name, "ReconcileFailed")
	if ev.Note != want {
		t.Errorf("event note %q, want %q", ev.Note, want)
	}
	if n.applies.Load() != 0 {
		t.Error("applied after an abort")
	}
}

func TestPolicyCapturesCachedAndReused(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-capture", ns.Path, map[string]string{"pol-capture": "yes"})
	n.start(t, nil)
	desired := func(ip string) string {
		return `interfaces:
- name: "{{ capture.nic.interfaces.0.name }}"
  type: veth
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: ` + ip + `, prefix-length: 24}]}
`
	}
	p := n.createPolicy(t, "pol-capture", desired("198.51.100.20"), map[string]string{"pol-capture": "yes"},
		map[string]string{"nic": `interfaces.name=="eth1"`})
	e := n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	cs, ok := e.Status.CapturedStates["nic"]
	if !ok || !strings.Contains(cs.State.String(), `"eth1"`) {
		t.Fatalf("capturedStates = %+v, want nic holding eth1", e.Status.CapturedStates)
	}
	if strings.Contains(e.Status.DesiredState.String(), "capture.") || !strings.Contains(e.Status.DesiredState.String(), `"eth1"`) {
		t.Errorf("desiredState %s: template not resolved", e.Status.DesiredState)
	}
	captured := cs.MetaInfo.TimeStamp
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))

	// A new generation renders again from the cache: same capture time.
	// Admission only lets a finished policy change: play the controller's
	// status write first.
	if err := n.c.Status().Patch(context.Background(), p, client.RawPatch(types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"Available","status":"True","reason":"SuccessfullyConfigured"}]}}`))); err != nil {
		t.Fatal(err)
	}
	if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	st, _ := shared.NewState([]byte(desired("198.51.100.21")))
	p.Spec.DesiredState = st
	if err := n.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e = n.waitEnactment(t, p.Name, "Pending for generation 2", phaseIs(2, phasePending))
	if got := e.Status.CapturedStates["nic"].MetaInfo.TimeStamp; !got.Equal(&captured) {
		t.Errorf("capture time %v, want the cached %v", got, captured)
	}
	n.grant(t, p.Name, 2)
	n.waitEnactment(t, p.Name, "Available for generation 2", phaseIs(2, phaseAvailable))
	if !hasAddress(n.show(t), "eth1", "198.51.100.21") {
		t.Error("eth1 lacks 198.51.100.21")
	}
}

func TestPolicyPendingCheckpointRolledBackAtStart(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-ckpt", ns.Path, nil)
	m := newTestMetrics(t)
	desired, err := nmstate.Decode([]byte(staticAddr("eth1", "198.51.100.30/24")))
	if err != nil {
		t.Fatal(err)
	}
	// A previous handler applied without committing and died.
	if _, err := apply.Apply(context.Background(), n.backend, desired, apply.Options{NoCommit: true, StateDir: n.stateDir, NetNS: n.nsPath, Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !hasAddress(n.show(t), "eth1", "198.51.100.30") {
		t.Fatal("setup: address not applied")
	}
	n.start(t, func(o *PolicyOptions) { o.Metrics = m.Handler }) // no policy at all: the start itself rolls back
	// The address goes first; the record once the rollback is verified.
	deadline := time.Now().Add(hangGuard)
	for {
		_, err := apply.ReadCheckpoint(n.stateDir)
		addr := hasAddress(n.show(t), "eth1", "198.51.100.30")
		if !addr && errors.Is(err, apply.ErrNoCheckpoint) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending checkpoint not rolled back at start: address still there %v, record: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	deadline = time.Now().Add(hangGuard)
	for m.value(t, "knmstate_handler_rollbacks_total", "node", n.name, "reason", "pending_checkpoint") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the rollback at start is not counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
