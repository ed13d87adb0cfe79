package handler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestPolicyQueueNameOrder(t *testing.T) {
	q := policyQueue("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second))
	defer q.ShutDown()
	req := func(n string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Name: n}}
	}
	for _, n := range []string{"c", "a", "d", "b", "a"} {
		q.Add(req(n))
	}
	var got []string
	first, _ := q.Get()
	got = append(got, first.Name)
	// Added while "a" is being processed: waits for Done, then in order.
	q.Add(req("a"))
	q.Add(req("0"))
	for i := 0; i < 4; i++ {
		r, _ := q.Get()
		got = append(got, r.Name)
		q.Done(r)
	}
	q.Done(first)
	r, _ := q.Get()
	got = append(got, r.Name)
	if diff := cmp.Diff([]string{"a", "0", "b", "c", "d", "a"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
