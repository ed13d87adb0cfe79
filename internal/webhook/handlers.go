package webhook

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/admission"
	"github.com/knmstate/knmstate/internal/extension"
)

// validate admits a policy create, or an update that changes the spec or
// the knmstate.io annotations, only when admission finds nothing wrong with
// what changed; everything else (status, deletion, other metadata-only
// updates) passes.
func validate(log logr.Logger) cradmission.HandlerFunc {
	return func(ctx context.Context, req cradmission.Request) cradmission.Response {
		if req.SubResource != "" {
			return cradmission.Allowed("")
		}
		checkSpec, checkAnnotations := true, true
		switch req.Operation {
		case admissionv1.Create:
		case admissionv1.Update:
			changed, err := admission.SpecChanged(req.OldObject.Raw, req.Object.Raw)
			if err != nil {
				return cradmission.Errored(http.StatusBadRequest, err)
			}
			oldAnn, err := admission.PolicyAnnotations(req.OldObject.Raw)
			if err != nil {
				return cradmission.Errored(http.StatusBadRequest, err)
			}
			newAnn, err := admission.PolicyAnnotations(req.Object.Raw)
			if err != nil {
				return cradmission.Errored(http.StatusBadRequest, err)
			}
			checkSpec, checkAnnotations = changed, extension.Changed(oldAnn, newAnn)
			if !checkSpec && !checkAnnotations {
				return cradmission.Allowed("spec and knmstate.io annotations unchanged")
			}
		default:
			return cradmission.Allowed("")
		}
		var errs admission.ErrorList
		if checkAnnotations {
			ann, err := admission.PolicyAnnotations(req.Object.Raw)
			if err != nil {
				return cradmission.Errored(http.StatusBadRequest, err)
			}
			errs = append(errs, admission.ValidateAnnotations(ann)...)
		}
		if checkSpec {
			spec, err := admission.PolicySpec(req.Object.Raw)
			if err != nil {
				return cradmission.Errored(http.StatusBadRequest, err)
			}
			errs = append(errs, admission.ValidatePolicy(spec)...)
		}
		if len(errs) == 0 {
			return cradmission.Allowed("")
		}
		log.V(1).Info("policy refused", "policy", req.Name, "user", req.UserInfo.Username, "problems", len(errs))
		return invalid(req, errs)
	}
}

// invalid is a refusal the API server returns as 422 Invalid (kubectl:
// `The request is invalid`), with each problem as a cause naming its field.
func invalid(req cradmission.Request, errs admission.ErrorList) cradmission.Response {
	causes := make([]metav1.StatusCause, len(errs))
	for i, e := range errs {
		causes[i] = metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: e.Field, Message: e.Detail}
	}
	resp := cradmission.Denied(errs.Error())
	resp.Result.Reason = metav1.StatusReasonInvalid
	resp.Result.Code = http.StatusUnprocessableEntity
	resp.Result.Details = &metav1.StatusDetails{
		Name:   req.Name,
		Group:  nmstatev1.GroupVersion.Group,
		Kind:   req.Kind.Kind,
		Causes: causes,
	}
	return resp
}

// mutation serves one of admission's mutations on the given subresource
// ("" the policy, "status" its status; both when any).
type mutation struct {
	subresources []string
	patch        func(obj []byte, now time.Time) ([]jsonpatch.JsonPatchOperation, error)
}

func mutate(m mutation, clock func() time.Time) cradmission.HandlerFunc {
	return func(ctx context.Context, req cradmission.Request) cradmission.Response {
		if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return cradmission.Allowed("")
		}
		applies := false
		for _, s := range m.subresources {
			applies = applies || s == req.SubResource
		}
		if !applies {
			return cradmission.Allowed("")
		}
		ops, err := m.patch(req.Object.Raw, clock())
		if err != nil {
			return cradmission.Errored(http.StatusBadRequest, err)
		}
		if len(ops) == 0 {
			return cradmission.Allowed("mutation not needed")
		}
		return cradmission.Patched("", ops...)
	}
}

var (
	clearConditions = mutation{subresources: []string{""},
		patch: func(obj []byte, _ time.Time) ([]jsonpatch.JsonPatchOperation, error) {
			return admission.ClearConditions(obj)
		}}
	unknownConditions = mutation{subresources: []string{"status"}, patch: admission.UnknownConditions}
	timestamp         = mutation{subresources: []string{"", "status"}, patch: admission.Timestamp}
)
