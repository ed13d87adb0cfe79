//go:build qemu

package nm_test

import "time"

// killedHandlerCheckpointTimeout: under qemu's TCG the apply's activations
// take seconds, and a 3 s checkpoint rolled back before eth1's profile was
// activated ("Connection could not be found"; kernel lane, loaded host).
const killedHandlerCheckpointTimeout = 15 * time.Second
