package benchcmd

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// nnsChanges watches the NodeNetworkStates and counts which parts of
// their reported state change, so that idle writes can be attributed
// ("routes.running x3").
type nnsChanges struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	last   map[string]map[string]any
	counts map[string]int
}

func watchNNSChanges(ctx context.Context, l *benchLab) (*nnsChanges, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := l.dyn.Resource(nnsGVR).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching NodeNetworkStates: %w", err)
	}
	c := &nnsChanges{cancel: cancel, done: make(chan struct{}), last: map[string]map[string]any{}, counts: map[string]int{}}
	go func() {
		defer close(c.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			cur, _, _ := unstructured.NestedMap(o.Object, "status", "currentState")
			c.mu.Lock()
			if prev, seen := c.last[o.GetName()]; seen {
				for _, p := range changedPaths(prev, cur, 2) {
					c.counts[p]++
				}
			}
			c.last[o.GetName()] = cur
			c.mu.Unlock()
		}
	}()
	return c, nil
}

// stop ends the watch and describes the changes seen ("" if none).
func (c *nnsChanges) stop() string {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(c.counts)) {
		parts = append(parts, fmt.Sprintf("%s x%d", p, c.counts[p]))
	}
	return strings.Join(parts, ", ")
}

// changedPaths lists the dotted paths, at most depth keys deep, under
// which a and b differ.
func changedPaths(a, b map[string]any, depth int) []string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		if depth > 1 && aok && bok {
			for _, p := range changedPaths(am, bm, depth-1) {
				out = append(out, k+"."+p)
			}
			continue
		}
		out = append(out, k)
	}
	return out
}
