package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		value   *intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		{"default 50% of 5 rounds up", nil, 5, 3, false},
		{"default 50% of 6", nil, 6, 3, false},
		{"50% of 5", ptr(intstr.FromString("50%")), 5, 3, false},
		{"50% of 6", ptr(intstr.FromString("50%")), 6, 3, false},
		{"int 3", ptr(intstr.FromInt32(3)), 6, 3, false},
		{"int above total", ptr(intstr.FromInt32(10)), 6, 10, false},
		{"0% is at least 1", ptr(intstr.FromString("0%")), 6, 1, false},
		{"int 0 is at least 1", ptr(intstr.FromInt32(0)), 6, 1, false},
		{"negative is at least 1", ptr(intstr.FromInt32(-2)), 6, 1, false},
		{"100%", ptr(intstr.FromString("100%")), 6, 6, false},
		{"1% of 6 rounds up", ptr(intstr.FromString("1%")), 6, 1, false},
		{"no nodes", nil, 0, 1, false},
		{"invalid string falls back to 50%", ptr(intstr.FromString("asdf")), 5, 3, true},
		{"bare number string falls back to 50%", ptr(intstr.FromString("42")), 5, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MaxUnavailable(tt.value, tt.total)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("MaxUnavailable(%v, %d) = %d, %v; want %d, error %v", tt.value, tt.total, got, err, tt.want, tt.wantErr)
			}
		})
	}
	_, err := MaxUnavailable(ptr(intstr.FromString("asdf")), 5)
	if want := `spec.maxUnavailable: "asdf" is neither a number nor a percentage, using 50%`; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func ptr[T any](v T) *T { return &v }

func names(nodes ...int) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("node%d.policy1", n))
	}
	return out
}

func TestPermits(t *testing.T) {
	now := t0.Add(time.Hour)
	two := maxUnavailable(intstr.FromInt32(2))
	tests := []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		nodes      []corev1.Node
		handlers   map[string]bool
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		want       PermitDecision
	}{
		{
			name:   "grants up to the limit in node order",
			policy: policy(two), nodes: nodes(6), handlers: handlers(6),
			enactments: enactments(6, state(1, "pending")),
			want:       PermitDecision{Generation: 1, Limit: 2, Grant: names(1, 2)},
		},
		{
			name:   "default 50% of 6 nodes",
			policy: policy(), nodes: nodes(6), handlers: handlers(6),
			enactments: enactments(6, state(1, "pending")),
			want:       PermitDecision{Generation: 1, Limit: 3, Grant: names(1, 2, 3)},
		},
		{
			name:   "progressing, retrying and failed enactments hold their permits",
			policy: policy(maxUnavailable(intstr.FromInt32(3))), nodes: nodes(6), handlers: handlers(6),
			enactments: join(
				one(enactment("node1", state(1, "progressing"), permit(1))),
				one(enactment("node2", state(1, "retrying"), permit(1))),
				one(enactment("node3", state(1, "failed"), permit(1))),
				[]v1beta1.NodeNetworkConfigurationEnactment{enactment("node4", state(1, "pending")), enactment("node5", state(1, "pending")), enactment("node6", state(1, "pending"))},
			),
			want: PermitDecision{Generation: 1, Limit: 3, InUse: 3},
		},
		{
			name:   "a granted permit not yet used is held",
			policy: policy(two), nodes: nodes(3), handlers: handlers(3),
			enactments: join(enactments(2, state(1, "pending"), permit(1)), one(enactment("node3", state(1, "pending")))),
			want:       PermitDecision{Generation: 1, Limit: 2, InUse: 2},
		},
		{
			name:   "available and aborted enactments free their permits",
			policy: policy(two), nodes: nodes(5), handlers: handlers(5),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "available"), permit(1)), enactment("node2", state(1, "aborted"), permit(1)),
				enactment("node3", state(1, "progressing"), permit(1)), enactment("node4", state(1, "pending")), enactment("node5", state(1, "pending")),
			},
			want: PermitDecision{Generation: 1, Limit: 2, InUse: 1, Grant: names(4)},
		},
		{
			name:   "permits of an older generation are not held",
			policy: policy(two, generation(2)), nodes: nodes(3), handlers: handlers(3),
			enactments: join(enactments(2, state(2, "pending"), permit(1)), one(enactment("node3", state(1, "progressing"), permit(1)))),
			want:       PermitDecision{Generation: 2, Limit: 2, Grant: names(1, 2)},
		},
		{
			name:   "only pending enactments of the current generation ask",
			policy: policy(two, generation(2)), nodes: nodes(4), handlers: handlers(4),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "pending")), enactment("node2", state(2, "unknown")),
				enactment("node3", state(2, "available")), enactment("node4", state(2, "pending")),
			},
			want: PermitDecision{Generation: 2, Limit: 2, Grant: names(4)},
		},
		{
			name:   "no permit for NotReady nodes",
			policy: policy(two), nodes: append(nodes(2), node("node3", notReadyFor(time.Second, now))), handlers: handlers(3),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node3", state(1, "pending")), enactment("node1", state(1, "available")), enactment("node2", state(1, "pending")),
			},
			want: PermitDecision{Generation: 1, Limit: 2, Grant: names(2)},
		},
		{
			name:   "no permit for nodes without a handler or not matching",
			policy: policy(two, selector("role", "worker")),
			nodes:  []corev1.Node{node("node1", label("role", "worker")), node("node2", label("role", "worker")), node("node3")}, handlers: handlers(1),
			enactments: enactments(3, state(1, "pending")),
			want:       PermitDecision{Generation: 1, Limit: 2, Grant: names(1)},
		},
		{
			name:   "the limit scales with matching nodes, not enactments",
			policy: policy(maxUnavailable(intstr.FromString("50%"))), nodes: nodes(6), handlers: handlers(6),
			enactments: enactments(2, state(1, "pending")),
			want:       PermitDecision{Generation: 1, Limit: 3, Grant: names(1, 2)},
		},
		{
			name:   "one failure below the limit keeps its slot, others continue",
			policy: policy(two), nodes: nodes(6), handlers: handlers(6),
			enactments: join(
				one(enactment("node1", state(1, "failed"), permit(1))),
				one(enactment("node2", state(1, "available"), permit(1))),
				[]v1beta1.NodeNetworkConfigurationEnactment{enactment("node3", state(1, "pending")), enactment("node4", state(1, "pending"))},
			),
			want: PermitDecision{Generation: 1, Limit: 2, InUse: 1, Grant: names(3)},
		},
		{
			name:   "failures reaching the limit abort the rest",
			policy: policy(two), nodes: nodes(6), handlers: handlers(6),
			enactments: join(
				enactments(2, state(1, "failed"), permit(1)),
				[]v1beta1.NodeNetworkConfigurationEnactment{
					enactment("node3", state(1, "pending")), enactment("node4", state(1, "pending")),
					enactment("node5", state(1, "unknown")), enactment("node6", state(0, "unknown")),
				},
			),
			want: PermitDecision{Generation: 1, Limit: 2, InUse: 2, Abort: names(3, 4, 5, 6)},
		},
		{
			name:   "aborts are not repeated and spare finished and permitted enactments",
			policy: policy(maxUnavailable(intstr.FromInt32(1))), nodes: nodes(5), handlers: handlers(5),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "failed"), permit(1)), enactment("node2", state(1, "pending"), abort(1)),
				enactment("node3", state(1, "aborted"), abort(1)), enactment("node4", state(1, "available")),
				enactment("node5", state(1, "pending")),
			},
			want: PermitDecision{Generation: 1, Limit: 1, InUse: 1, Abort: names(5)},
		},
		{
			name:   "a failure to render (no permit) counts towards aborting",
			policy: policy(maxUnavailable(intstr.FromInt32(1))), nodes: nodes(2), handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{enactment("node1", state(1, "failed")), enactment("node2", state(1, "pending"))},
			want:       PermitDecision{Generation: 1, Limit: 1, Abort: names(2)},
		},
		{
			name:   "retrying does not abort others",
			policy: policy(maxUnavailable(intstr.FromInt32(1))), nodes: nodes(2), handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{enactment("node1", state(1, "retrying"), permit(1)), enactment("node2", state(1, "pending"))},
			want:       PermitDecision{Generation: 1, Limit: 1, InUse: 1},
		},
		{
			name:   "permits of deleted or non-matching nodes are free",
			policy: policy(maxUnavailable(intstr.FromInt32(1)), selector("role", "worker")),
			nodes:  []corev1.Node{node("node1", label("role", "worker")), node("node2")}, handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "pending")), enactment("node2", state(1, "progressing"), permit(1)),
				enactment("node9", state(1, "progressing"), permit(1)),
			},
			want: PermitDecision{Generation: 1, Limit: 1, Grant: names(1)},
		},
		{
			name:   "a node NotReady for ReclaimAfter loses its permit",
			policy: policy(maxUnavailable(intstr.FromInt32(1))), nodes: []corev1.Node{node("node1", notReadyFor(5*time.Minute, now)), node("node2")}, handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{enactment("node1", state(1, "progressing"), permit(1)), enactment("node2", state(1, "pending"))},
			want:       PermitDecision{Generation: 1, Limit: 1, Revoke: names(1), Grant: names(2)},
		},
		{
			name:   "a node NotReady for less keeps it, decided again when it would expire",
			policy: policy(maxUnavailable(intstr.FromInt32(1))), nodes: []corev1.Node{node("node1", notReadyFor(time.Minute, now)), node("node2")}, handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{enactment("node1", state(1, "progressing"), permit(1)), enactment("node2", state(1, "pending"))},
			want:       PermitDecision{Generation: 1, Limit: 1, InUse: 1, RequeueAfter: 4 * time.Minute},
		},
		{
			name:   "invalid maxUnavailable uses 50% and says so",
			policy: policy(maxUnavailable(intstr.FromString("asdf"))), nodes: nodes(4), handlers: handlers(4),
			enactments: enactments(4, state(1, "pending")),
			want: PermitDecision{Generation: 1, Limit: 2, Grant: names(1, 2),
				LimitError: fmt.Errorf(`spec.maxUnavailable: "asdf" is neither a number nor a percentage, using 50%%`)},
		},
		{
			name:  "deleted policy",
			nodes: nodes(1), handlers: handlers(1),
			enactments: enactments(1, state(1, "pending")),
			want:       PermitDecision{},
		},
	}
	errString := cmp.Comparer(func(a, b error) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return a.Error() == b.Error()
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Permits(Input{PolicyName: "policy1", Policy: tt.policy, Nodes: tt.nodes, Handlers: tt.handlers, Enactments: tt.enactments, Now: now, Config: DefaultConfig})
			if diff := cmp.Diff(tt.want, got, errString); diff != "" {
				t.Errorf("Permits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPermitsRollout plays a whole rollout against the decision function:
// fake handlers ask, apply and finish; at no step may more than the limit
// hold permits, and every node ends Available.
func TestPermitsRollout(t *testing.T) {
	for _, tc := range []struct {
		nodes, limit int
		fail         map[int]bool
		wantFailed   int
		wantAborted  int
	}{
		{nodes: 6, limit: 2},
		{nodes: 7, limit: 3},
		{nodes: 6, limit: 2, fail: map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true}, wantFailed: 2, wantAborted: 4},
		{nodes: 6, limit: 2, fail: map[int]bool{2: true, 4: true, 6: true}, wantFailed: 2, wantAborted: 2},
	} {
		t.Run(fmt.Sprintf("%d nodes limit %d fail %v", tc.nodes, tc.limit, tc.fail), func(t *testing.T) {
			p := policy(maxUnavailable(intstr.FromInt32(int32(tc.limit))))
			es := enactments(tc.nodes, state(1, "pending"))
			in := Input{Policy: p, Nodes: nodes(tc.nodes), Handlers: handlers(tc.nodes), Now: t0, Config: DefaultConfig}
			index := map[string]int{}
			for i := range es {
				index[es[i].Name] = i
			}
			for step := 0; step < 100; step++ {
				in.Enactments = es
				d := Permits(in)
				held := 0
				for i := range es {
					if HoldsPermit(&es[i], 1) {
						held++
					}
				}
				if held > tc.limit {
					t.Fatalf("step %d: %d permits held, limit %d", step, held, tc.limit)
				}
				for _, n := range d.Grant {
					permit(1)(&es[index[n]])
				}
				for _, n := range d.Abort {
					abort(1)(&es[index[n]])
				}
				// Each handler moves one step: pending with a permit starts,
				// progressing finishes, pending with an abort aborts.
				moved := len(d.Grant) + len(d.Abort)
				for i := range es {
					e := &es[i]
					switch ph := phaseOf(e, 1); {
					case ph == phasePending && annotationGeneration(e, PermitAnnotation) == 1:
						state(1, "progressing")(e)
						moved++
					case ph == phasePending && annotationGeneration(e, AbortAnnotation) == 1:
						state(1, "aborted")(e)
						moved++
					case ph == phaseProgressing && tc.fail[i+1]:
						state(1, "failed")(e)
						moved++
					case ph == phaseProgressing:
						state(1, "available")(e)
						moved++
					}
				}
				if moved == 0 {
					break
				}
			}
			count := map[phase]int{}
			for i := range es {
				count[phaseOf(&es[i], 1)]++
			}
			want := map[phase]int{phaseAvailable: tc.nodes - tc.wantFailed - tc.wantAborted, phaseFailed: tc.wantFailed, phaseAborted: tc.wantAborted}
			for k, v := range want {
				if v == 0 {
					delete(want, k)
				}
			}
			if diff := cmp.Diff(want, count); diff != "" {
				t.Fatalf("final phases (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkDecisions measures one round of the three decisions for a
// policy on 1000 nodes halfway through its rollout.
func BenchmarkDecisions(b *testing.B) {
	const n = 1000
	in := Input{Policy: policy(maxUnavailable(intstr.FromString("10%"))), Nodes: nodes(n), Handlers: handlers(n), Now: t0, Config: DefaultConfig}
	in.Enactments = join(enactments(n/2, state(1, "available"), permit(1)), nil)
	for i := n/2 + 1; i <= n; i++ {
		in.Enactments = append(in.Enactments, enactment(fmt.Sprintf("node%d", i), state(1, "pending")))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = PolicyStatus(in)
		_ = Permits(in)
		_ = Collect(in)
	}
}
