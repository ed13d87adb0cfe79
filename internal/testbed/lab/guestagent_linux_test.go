package lab

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab/remoteexec"
)

// TestGuestAgentEndpoints: the agent's HTTP side, without a guest: the
// token is required, the state is served, a start it does not wait for is
// refused, and exec names nodes that do not exist.
func TestGuestAgentEndpoints(t *testing.T) {
	a := &agent{
		cfg:      GuestConfig{Name: "g", Token: "tok"},
		start:    make(chan startReq),
		spawners: map[string]*spawner{},
		s: &supervisor{
			opts: Options{Name: "g"}, where: "guest", log: slog.New(slog.DiscardHandler),
			state: State{Name: "g", Phase: PhaseStarting, Nodes: []NodeState{{Name: "node01"}}},
		},
	}
	srv := httptest.NewServer(a.mux())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := newGuestClient(addr, "wrong").status(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("status with a wrong token: %v, want 401", err)
	}
	c := newGuestClient(addr, "tok")
	st, err := c.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "g" || st.Phase != PhaseStarting {
		t.Errorf("status %+v", st)
	}
	if err := c.start(ctx, guestStart{}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("start while building: %v, want 409", err)
	}
	var out bytes.Buffer
	for node, want := range map[string]string{
		"node09": `lab g has no node "node09"`,
		"node01": "node node01 is not built yet (phase Starting)",
	} {
		_, err := remoteexec.Run(ctx, addr, "tok", remoteexec.Request{Target: node, Args: []string{"true"}}, nil, &out, &out)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("exec in %s: %v, want %q", node, err, want)
		}
	}
}
