package admission

import (
	"encoding/json"
	"testing"
	"time"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
)

var mutateNow = time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)

// unknownConds is the status.conditions UnknownConditions writes at
// mutateNow.
const unknownConds = `[` +
	`{"type":"Available","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
	`{"type":"Degraded","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
	`{"type":"Progressing","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"},` +
	`{"type":"Ignored","status":"Unknown","lastHeartbeatTime":"2026-03-04T05:06:07Z","lastTransitionTime":"2026-03-04T05:06:07Z"}]`

func TestMutations(t *testing.T) {
	const stamp = "1772600767000000008"
	for _, tc := range []struct {
		name   string
		mutate func([]byte) ([]jsonpatch.JsonPatchOperation, error)
		obj    string
		patch  string // the JSON patch, "" for none
		result string // obj after the patch
	}{{
		name:   "clear: conditions removed",
		mutate: ClearConditions,
		obj:    `{"metadata":{"name":"p"},"status":{"conditions":[{"type":"Available","status":"True"}],"unavailableNodeCountMap":{"1":1}}}`,
		patch:  `[{"op":"remove","path":"/status/conditions"}]`,
		result: `{"metadata":{"name":"p"},"status":{"unavailableNodeCountMap":{"1":1}}}`,
	}, {
		name:   "clear: no status, nothing to do",
		mutate: ClearConditions,
		obj:    `{"metadata":{"name":"p"},"spec":{}}`,
	}, {
		name:   "clear: status without conditions, nothing to do",
		mutate: ClearConditions,
		obj:    `{"metadata":{"name":"p"},"status":{}}`,
	}, {
		name:   "status: none become four Unknown",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return UnknownConditions(o, mutateNow) },
		obj:    `{"metadata":{"name":"p"},"status":{"unavailableNodeCountMap":{}}}`,
		patch:  `[{"op":"add","path":"/status/conditions","value":` + unknownConds + `}]`,
		result: `{"metadata":{"name":"p"},"status":{"conditions":` + unknownConds + `,"unavailableNodeCountMap":{}}}`,
	}, {
		name:   "status: an empty list too",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return UnknownConditions(o, mutateNow) },
		obj:    `{"metadata":{"name":"p"},"status":{"conditions":[]}}`,
		patch:  `[{"op":"add","path":"/status/conditions","value":` + unknownConds + `}]`,
		result: `{"metadata":{"name":"p"},"status":{"conditions":` + unknownConds + `}}`,
	}, {
		name:   "status: no status at all",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return UnknownConditions(o, mutateNow) },
		obj:    `{"metadata":{"name":"p"}}`,
		patch:  `[{"op":"add","path":"/status","value":{"conditions":` + unknownConds + `}}]`,
		result: `{"metadata":{"name":"p"},"status":{"conditions":` + unknownConds + `}}`,
	}, {
		name:   "status: conditions kept",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return UnknownConditions(o, mutateNow) },
		obj:    `{"metadata":{"name":"p"},"status":{"conditions":[{"type":"Available","status":"True"}]}}`,
	}, {
		name:   "timestamp: first annotation",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return Timestamp(o, mutateNow) },
		obj:    `{"metadata":{"name":"p"}}`,
		patch:  `[{"op":"add","path":"/metadata/annotations","value":{"nmstate.io/webhook-mutating-timestamp":"` + stamp + `"}}]`,
		result: `{"metadata":{"name":"p","annotations":{"nmstate.io/webhook-mutating-timestamp":"` + stamp + `"}}}`,
	}, {
		name:   "timestamp: replaces the last one, keeps the others",
		mutate: func(o []byte) ([]jsonpatch.JsonPatchOperation, error) { return Timestamp(o, mutateNow) },
		obj:    `{"metadata":{"name":"p","annotations":{"a":"b","nmstate.io/webhook-mutating-timestamp":"1"}}}`,
		patch:  `[{"op":"add","path":"/metadata/annotations/nmstate.io~1webhook-mutating-timestamp","value":"` + stamp + `"}]`,
		result: `{"metadata":{"name":"p","annotations":{"a":"b","nmstate.io/webhook-mutating-timestamp":"` + stamp + `"}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := tc.mutate([]byte(tc.obj))
			if err != nil {
				t.Fatal(err)
			}
			if tc.patch == "" {
				if len(ops) != 0 {
					t.Fatalf("patch = %v, want none", ops)
				}
				return
			}
			raw, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canonical(t, tc.patch), canonical(t, string(raw))); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			p, err := jsonpatchapply.DecodePatch(raw)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply([]byte(tc.obj))
			if err != nil {
				t.Fatalf("applying %s: %v", raw, err)
			}
			if diff := cmp.Diff(canonical(t, tc.result), canonical(t, string(out))); diff != "" {
				t.Errorf("patched object (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMutationsRefuseGarbage(t *testing.T) {
	if _, err := ClearConditions([]byte("not json")); err == nil {
		t.Error("ClearConditions accepted garbage")
	}
}

func canonical(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}
