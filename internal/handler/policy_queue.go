package handler

import (
	"container/heap"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// policyQueue is the policy controller's work queue: the standard
// rate-limited, delaying, de-duplicating queue whose ready items come out
// in policy name order, so that when several policies wait (start-up, a
// node label change) they are applied in name order, as upstream does.
func policyQueue(_ string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Queue: &byName{}})
	dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{DelayingQueue: dq})
}

// byName is a min-heap of requests by name (workqueue.Queue); the work
// queue calls it from one goroutine at a time.
type byName []reconcile.Request

func (q *byName) Touch(reconcile.Request)  {}
func (q *byName) Push(r reconcile.Request) { heap.Push((*nameHeap)(q), r) }
func (q *byName) Len() int                 { return len(*q) }
func (q *byName) Pop() reconcile.Request   { return heap.Pop((*nameHeap)(q)).(reconcile.Request) }

type nameHeap []reconcile.Request

func (h nameHeap) Len() int           { return len(h) }
func (h nameHeap) Less(i, j int) bool { return h[i].Name < h[j].Name }
func (h nameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nameHeap) Push(x any)        { *h = append(*h, x.(reconcile.Request)) }
func (h *nameHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
