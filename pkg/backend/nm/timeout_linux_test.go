//go:build !qemu

package nm_test

import "time"

// killedHandlerCheckpointTimeout is the checkpoint timeout of
// TestHandlerKilledRollsBackByNetworkManagerTimer: NetworkManager's own
// timer must fire soon after the "handler" dies, but only after the apply
// has activated its profiles.
const killedHandlerCheckpointTimeout = 3 * time.Second
