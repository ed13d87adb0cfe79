package controller

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestWithRateLimit(t *testing.T) {
	tests := []struct {
		name       string
		in         rest.Config
		qps        float32
		burst      int
		sameObject bool
	}{
		{"kubeconfig without limits gets the controller's", rest.Config{Host: "h"}, DefaultQPS, DefaultBurst, false},
		{"limits given are kept", rest.Config{Host: "h", QPS: 3, Burst: 7}, 3, 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			got := withRateLimit(&in)
			if got.QPS != tt.qps || got.Burst != tt.burst {
				t.Errorf("QPS, Burst = %v, %d; want %v, %d", got.QPS, got.Burst, tt.qps, tt.burst)
			}
			if (got == &in) != tt.sameObject {
				t.Errorf("returned the caller's config: %v, want %v", got == &in, tt.sameObject)
			}
			if in.QPS != tt.in.QPS {
				t.Errorf("caller's config changed: QPS %v", in.QPS)
			}
		})
	}
}
