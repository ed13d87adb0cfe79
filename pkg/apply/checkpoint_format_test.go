package apply

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// The record is the same bytes as encoding/json makes of checkpointWire
// with each state's EncodeJSON: the fast encoder changes no record format.
func TestCheckpointRecordBytesUnchanged(t *testing.T) {
	desc := `uplink <a> & "b"`
	rec := &Checkpoint{
		ID: "20261121T120000Z-01020304", Created: t0, Deadline: t0.Add(time.Minute),
		NetNS: "knmt-1", UTSNS: "/u",
		Before:  st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24")))),
		Desired: &nmstate.State{Interfaces: []nmstate.Interface{{Name: "eth1", Type: nmstate.TypeEthernet, Description: &desc}}},
	}
	w := checkpointWire{Version: recordVersion, ID: rec.ID, Created: rec.Created.UTC(), Deadline: rec.Deadline.UTC(), NetNS: rec.NetNS, UTSNS: rec.UTSNS}
	for _, s := range []struct {
		dst *json.RawMessage
		v   *nmstate.State
	}{{&w.Before, rec.Before}, {&w.Desired, rec.Desired}, {&w.Revert, &nmstate.State{}}} {
		b, err := nmstate.EncodeJSON(s.v)
		if err != nil {
			t.Fatal(err)
		}
		*s.dst = b
	}
	want, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rec.encodeRecord(true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if !json.Valid(got) {
		t.Errorf("record is not valid JSON: %s", got)
	}
}
