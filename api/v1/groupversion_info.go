// Package v1 holds the nmstate.io/v1 API kinds. Spec and status types come
// from api/shared, so versions convert by changing apiVersion only (the CRDs
// have no conversion webhook). It must not hold behaviour.
//
// +kubebuilder:object:generate=true
// +groupName=nmstate.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this package's kinds.
var GroupVersion = schema.GroupVersion{Group: "nmstate.io", Version: "v1"}

// AddToScheme registers this package's kinds with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
