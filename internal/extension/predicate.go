package extension

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// PolicyChanged passes what changes what the handler and the controller do
// with a policy: creations, deletions, a new generation, or a change of
// its knmstate.io annotations (which does not bump the generation), or
// the start of its deletion (revert on delete).
func PolicyChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && (Changed(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero())
		},
	})
}
