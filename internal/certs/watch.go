package certs

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// lister is the List and Watch of one typed client.
type lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchNamed keeps an informer on the one object called name (a
// metadata.name field selector, which RBAC's resourceNames can authorize:
// no access to the other Secrets of the namespace is needed) and calls
// changed with the object on every addition and update, and with nil on
// deletion. It returns when ctx ends; hasSynced reports the first list.
func watchNamed[L runtime.Object](ctx context.Context, c lister[L], obj runtime.Object, name string, changed func(obj any)) (hasSynced func() bool) {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return c.Watch(ctx, o)
		},
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { changed(o) },
			UpdateFunc: func(_, o any) { changed(o) },
			DeleteFunc: func(any) { changed(nil) },
		},
	})
	go ctrl.RunWithContext(ctx)
	return ctrl.HasSynced
}
