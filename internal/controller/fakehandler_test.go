package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/rollout"
)

// The fake handler is a test double of the handler side of the permit
// protocol (docs/rollout.md), acting through the real API server with the
// handler's ServiceAccount: it creates its enactment, asks for a permit,
// applies (nothing) once granted, reports the outcome, and aborts when told.
// The handler itself is not under test here.

// outcome decides how one apply ends: "available" or "failed".
type outcome func(ctx context.Context, node string) string

// enactmentConditions sets the five enactment conditions the way the
// kubernetes-nmstate setters do.
func enactmentConditions(state string) shared.ConditionList {
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	var st [5]corev1.ConditionStatus
	var reason shared.ConditionReason
	switch state {
	case "pending":
		st, reason = [5]corev1.ConditionStatus{F, F, F, T, F}, shared.NodeNetworkConfigurationEnactmentConditionMaxUnavailableLimitReached
	case "progressing":
		st, reason = [5]corev1.ConditionStatus{U, U, T, F, F}, shared.NodeNetworkConfigurationEnactmentConditionConfigurationProgressing
	case "available":
		st, reason = [5]corev1.ConditionStatus{T, F, F, F, F}, shared.NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured
	case "failed":
		st, reason = [5]corev1.ConditionStatus{F, T, F, F, F}, shared.NodeNetworkConfigurationEnactmentConditionFailedToConfigure
	case "aborted":
		st, reason = [5]corev1.ConditionStatus{F, F, F, F, T}, shared.NodeNetworkConfigurationEnactmentConditionConfigurationAborted
	}
	l := shared.ConditionList{}
	for i, t := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
		l.Set(t, st[i], reason, "")
	}
	return l
}

// runHandler plays the handler of node for policy p until its enactment
// finishes or ctx ends; errors fail the test.
func (f *fixture) runHandler(ctx context.Context, wg *sync.WaitGroup, node string, p *nmstatev1.NodeNetworkConfigurationPolicy, decide outcome) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := f.handle(ctx, node, p, decide); err != nil && ctx.Err() == nil {
			f.t.Errorf("fake handler %s: %v", node, err)
		}
	}()
}

func (f *fixture) handle(ctx context.Context, node string, p *nmstatev1.NodeNetworkConfigurationPolicy, decide outcome) error {
	c := f.c.handlerOf(node)
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	name := shared.EnactmentName(node, p.Name)
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:            name,
		Labels:          map[string]string{shared.EnactmentPolicyLabel: p.Name, shared.EnactmentNodeLabel: node},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID}},
	}}
	if err := c.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	gen := p.Generation
	state := "pending"
	if err := f.setEnactment(ctx, node, name, gen, state); err != nil {
		return err
	}
	var result error
	err := f.c.follow(ctx, &v1beta1.NodeNetworkConfigurationEnactmentList{},
		[]client.ListOption{client.MatchingFields{"metadata.name": name}}, nil,
		func(typ watch.EventType, o runtime.Object) bool {
			cur, ok := o.(*v1beta1.NodeNetworkConfigurationEnactment)
			if !ok || typ == watch.Deleted {
				return false
			}
			want := strconv.FormatInt(gen, 10)
			switch {
			case state == "pending" && cur.Annotations[rollout.PermitAnnotation] == want:
				state = "progressing"
				if result = f.setEnactment(ctx, node, name, gen, state); result != nil {
					return false
				}
				state = decide(ctx, node)
				if ctx.Err() == nil {
					result = f.setEnactment(ctx, node, name, gen, state)
				}
				return false
			case state == "pending" && cur.Annotations[rollout.AbortAnnotation] == want:
				result = f.setEnactment(ctx, node, name, gen, "aborted")
				return false
			}
			return true
		})
	if err != nil {
		return err
	}
	return result
}

// setEnactment writes the enactment status with a merge patch without a
// resourceVersion: the handler is the only writer of it.
func (f *fixture) setEnactment(ctx context.Context, node, name string, gen int64, state string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"policyGeneration": gen,
		"conditions":       enactmentConditions(state),
	}})
	if err != nil {
		return err
	}
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return f.c.handlerOf(node).Status().Patch(ctx, e, client.RawPatch(types.MergePatchType, patch))
}

// sampler follows every enactment change of one policy, in the API
// server's order, and records the most permits held and the most
// enactments Progressing at any point.
type sampler struct {
	mu             sync.Mutex
	latest         map[string]*v1beta1.NodeNetworkConfigurationEnactment
	maxHeld        int
	maxProgressing int
	done           chan struct{}
}

func (f *fixture) sample(policy string, gen int64) *sampler {
	f.t.Helper()
	s := &sampler{latest: map[string]*v1beta1.NodeNetworkConfigurationEnactment{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(func() { cancel(); <-s.done })
	listed := make(chan struct{})
	go func() {
		defer close(s.done)
		_ = f.c.follow(ctx, &v1beta1.NodeNetworkConfigurationEnactmentList{},
			[]client.ListOption{client.MatchingLabels{shared.EnactmentPolicyLabel: policy}}, func() { close(listed) },
			func(typ watch.EventType, o runtime.Object) bool {
				e, ok := o.(*v1beta1.NodeNetworkConfigurationEnactment)
				if !ok {
					return true
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if typ == watch.Deleted {
					delete(s.latest, e.Name)
				} else {
					s.latest[e.Name] = e
				}
				held, progressing := 0, 0
				for _, e := range s.latest {
					if rollout.HoldsPermit(e, gen) {
						held++
					}
					if c := e.Status.Conditions.Find(shared.NodeNetworkConfigurationEnactmentConditionProgressing); c != nil && c.Status == corev1.ConditionTrue {
						progressing++
					}
				}
				s.maxHeld = max(s.maxHeld, held)
				s.maxProgressing = max(s.maxProgressing, progressing)
				return true
			})
	}()
	<-listed
	return s
}

func (s *sampler) max() (held, progressing int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxHeld, s.maxProgressing
}

// statusRecorder follows a policy's status writes: every modification
// that changes its conditions (timestamps included) is one.
type statusRecorder struct {
	mu sync.Mutex
	// writes holds each written status without timestamps; two equal
	// neighbours would be a write that changed nothing but heartbeats.
	writes []string
	done   chan struct{}
}

func conditionsKey(l shared.ConditionList) string {
	var b strings.Builder
	for _, c := range l {
		fmt.Fprintf(&b, "%s=%s/%s/%s;", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func (f *fixture) recordStatus(policy string) *statusRecorder {
	f.t.Helper()
	r := &statusRecorder{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(func() { cancel(); <-r.done })
	listed := make(chan struct{})
	go func() {
		defer close(r.done)
		lastFull := ""
		_ = f.c.follow(ctx, &nmstatev1.NodeNetworkConfigurationPolicyList{},
			[]client.ListOption{client.MatchingFields{"metadata.name": policy}}, func() { close(listed) },
			func(typ watch.EventType, o runtime.Object) bool {
				p, ok := o.(*nmstatev1.NodeNetworkConfigurationPolicy)
				if !ok || typ == watch.Deleted {
					return true
				}
				full, _ := json.Marshal(p.Status.Conditions)
				if string(full) == lastFull {
					return true // not a status write
				}
				lastFull = string(full)
				if len(p.Status.Conditions) == 0 {
					return true // the creation
				}
				r.mu.Lock()
				r.writes = append(r.writes, conditionsKey(p.Status.Conditions))
				r.mu.Unlock()
				return true
			})
	}()
	<-listed
	return r
}

func (r *statusRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// statusManagers returns the field managers of the policy's status.
func (f *fixture) statusManagers(name string) map[string]bool {
	f.t.Helper()
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := f.c.admin.Get(f.ctx, client.ObjectKey{Name: name}, p); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range p.ManagedFields {
		if m.Subresource == "status" {
			out[m.Manager] = true
		}
	}
	return out
}

// annotationManagers returns the field managers of the permit and abort
// annotations of the policy's enactments.
func (f *fixture) annotationManagers(policy string) map[string]bool {
	f.t.Helper()
	out := map[string]bool{}
	for _, e := range f.enactments(policy) {
		for _, m := range e.ManagedFields {
			if m.FieldsV1 == nil {
				continue
			}
			s := string(m.FieldsV1.Raw)
			if strings.Contains(s, rollout.PermitAnnotation) || strings.Contains(s, rollout.AbortAnnotation) {
				out[m.Manager] = true
			}
		}
	}
	return out
}
