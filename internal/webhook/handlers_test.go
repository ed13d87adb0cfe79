package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

var clock = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC) }

const (
	validPolicy   = `{"apiVersion":"nmstate.io/v1","kind":"NodeNetworkConfigurationPolicy","metadata":{"name":"p"},"spec":{"desiredState":{"interfaces":[{"name":"eth1","type":"ethernet","state":"up"}]}}}`
	invalidPolicy = `{"apiVersion":"nmstate.io/v1","kind":"NodeNetworkConfigurationPolicy","metadata":{"name":"p"},"spec":{"desiredState":{"interfaces":[{"name":"eth1.5000","type":"vlan","vlan":{"base-iface":"eth1","id":5000}}]}},"status":{"conditions":[{"type":"Available","status":"True"}]}}`
	invalidBeta   = `{"apiVersion":"nmstate.io/v1beta1","kind":"NodeNetworkConfigurationPolicy","metadata":{"name":"p"},"spec":{"desiredState":{"interfaces":[{"name":"eth1","type":"ethernet","foo":1}]}}}`
)

// review is the request the API server would send.
type review struct {
	op          admissionv1.Operation
	version     string
	subresource string
	obj, old    string
}

// answer is what a test compares of the response.
type answer struct {
	Allowed bool
	Code    int32
	Reason  metav1.StatusReason
	Message string
	Causes  []metav1.StatusCause
	Patch   string // the JSON patch
}

func call(t *testing.T, h http.Handler, path string, r review) answer {
	t.Helper()
	if r.version == "" {
		r.version = "v1"
	}
	req := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:         types.UID("1"),
			Kind:        metav1.GroupVersionKind{Group: "nmstate.io", Version: r.version, Kind: "NodeNetworkConfigurationPolicy"},
			Resource:    metav1.GroupVersionResource{Group: "nmstate.io", Version: r.version, Resource: "nodenetworkconfigurationpolicies"},
			SubResource: r.subresource,
			Name:        "p",
			Operation:   r.op,
			Object:      runtime.RawExtension{Raw: []byte(r.obj)},
		},
	}
	if r.old != "" {
		req.Request.OldObject = runtime.RawExtension{Raw: []byte(r.old)}
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	hreq := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)).WithContext(t.Context())
	hreq.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, hreq)
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var resp admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Response == nil || resp.Response.UID != "1" {
		t.Fatalf("response %+v does not answer the request", resp.Response)
	}
	a := answer{Allowed: resp.Response.Allowed, Patch: string(resp.Response.Patch)}
	if s := resp.Response.Result; s != nil {
		a.Code, a.Reason, a.Message = s.Code, s.Reason, s.Message
		if s.Details != nil {
			a.Causes = s.Details.Causes
		}
	}
	return a
}

func TestHandlers(t *testing.T) {
	h := Handler(logr.Discard(), clock, func() error { return nil })
	vlanRefusal := answer{Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: "spec.desiredState.interfaces[0].vlan.id: 5000 is out of range 0..4094",
		Causes:  []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.desiredState.interfaces[0].vlan.id", Message: "5000 is out of range 0..4094"}}}
	for _, tc := range []struct {
		name string
		path string
		r    review
		want answer
	}{
		{"valid policy created", ValidatePath, review{op: admissionv1.Create, obj: validPolicy}, answer{Allowed: true, Code: 200}},
		{"invalid policy refused", ValidatePath, review{op: admissionv1.Create, obj: invalidPolicy}, vlanRefusal},
		{"v1beta1 too", ValidatePath, review{op: admissionv1.Create, version: "v1beta1", obj: invalidBeta}, answer{Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: "spec.desiredState.interfaces[0].foo: unknown field",
			Causes:  []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.desiredState.interfaces[0].foo", Message: "unknown field"}}}},
		{"update to an invalid spec refused", ValidatePath, review{op: admissionv1.Update, obj: invalidPolicy, old: validPolicy}, vlanRefusal},
		{"update leaving an old invalid spec alone passes", ValidatePath, review{op: admissionv1.Update, obj: invalidPolicy, old: invalidPolicy}, answer{Allowed: true, Code: 200, Message: "spec and knmstate.io annotations unchanged"}},
		{"status not validated", ValidatePath, review{op: admissionv1.Update, subresource: "status", obj: invalidPolicy, old: validPolicy}, answer{Allowed: true, Code: 200}},
		{"deletion not validated", ValidatePath, review{op: admissionv1.Delete, obj: invalidPolicy}, answer{Allowed: true, Code: 200}},
		{"garbage is an error", ValidatePath, review{op: admissionv1.Create, obj: `{"spec":[]}`}, answer{Code: 400,
			Message: "decoding the policy: json: cannot unmarshal array into Go struct field .spec of type shared.NodeNetworkConfigurationPolicySpec"}},

		{"conditions cleared on create", MutatePath, review{op: admissionv1.Create, obj: invalidPolicy},
			answer{Allowed: true, Code: 200, Patch: `[{"op":"remove","path":"/status/conditions"}]`}},
		{"nothing to clear", MutatePath, review{op: admissionv1.Update, obj: validPolicy, old: validPolicy},
			answer{Allowed: true, Code: 200, Message: "mutation not needed"}},
		{"clearing is not for status writes", MutatePath, review{op: admissionv1.Update, subresource: "status", obj: invalidPolicy},
			answer{Allowed: true, Code: 200}},
		{"status without conditions", StatusMutatePath, review{op: admissionv1.Update, subresource: "status", obj: validPolicy},
			answer{Allowed: true, Code: 200, Patch: `[{"op":"add","path":"/status","value":{"conditions":[` +
				`{"type":"Available","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
				`{"type":"Degraded","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
				`{"type":"Progressing","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
				`{"type":"Ignored","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"}]}}]`}},
		{"timestamp on the policy", TimestampMutatePath, review{op: admissionv1.Create, obj: validPolicy},
			answer{Allowed: true, Code: 200, Patch: `[{"op":"add","path":"/metadata/annotations","value":{"nmstate.io/webhook-mutating-timestamp":"1772600767000000008"}}]`}},
		{"timestamp on its status", TimestampMutatePath, review{op: admissionv1.Update, subresource: "status", obj: validPolicy},
			answer{Allowed: true, Code: 200, Patch: `[{"op":"add","path":"/metadata/annotations","value":{"nmstate.io/webhook-mutating-timestamp":"1772600767000000008"}}]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, h, tc.path, tc.r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	notReady := errors.New("no serving certificate loaded yet")
	for _, tc := range []struct {
		path  string
		ready error
		code  int
	}{
		{"/healthz", notReady, 200},
		{"/readyz", notReady, 503},
		{"/readyz", nil, 200},
	} {
		h := Handler(logr.Discard(), clock, func() error { return tc.ready })
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s (ready: %v) = %d, want %d", tc.path, tc.ready, rec.Code, tc.code)
		}
	}
}
