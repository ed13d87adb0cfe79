package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/knmstate/knmstate/api/shared"
)

// MaxUnavailable returns how many of total nodes may apply a policy at the
// same time: maxUnavailable as a number, or as a percentage of total rounded
// up; unset means 50%; never less than 1. A value that is neither a number
// nor a percentage falls back to 50% and is returned with an error naming
// it, so the caller can report it without stalling the rollout.
func MaxUnavailable(maxUnavailable *intstr.IntOrString, total int) (int, error) {
	v := shared.DefaultMaxUnavailable
	if maxUnavailable != nil {
		v = *maxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		fallback, _ := intstr.GetScaledValueFromIntOrPercent(&shared.DefaultMaxUnavailable, total, true)
		err = fmt.Errorf("spec.maxUnavailable: %q is neither a number nor a percentage, using %s", v.String(), shared.DefaultMaxUnavailable.String())
		n = fallback
	}
	if n < 1 {
		n = 1
	}
	return n, err
}
