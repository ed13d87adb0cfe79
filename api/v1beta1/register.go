package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&NodeNetworkConfigurationPolicy{}, &NodeNetworkConfigurationPolicyList{},
		&NodeNetworkConfigurationEnactment{}, &NodeNetworkConfigurationEnactmentList{},
		&NodeNetworkState{}, &NodeNetworkStateList{},
		&NMState{}, &NMStateList{},
	}
}
