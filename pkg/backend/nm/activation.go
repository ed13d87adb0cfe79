package nm

// NetworkManager's device states, active connection states and
// activation state flags (nm-dbus-interface.h) that judging an
// activation needs.
const (
	devPrepare      = 40
	devIPConfig     = 70
	devActivated    = 100
	devDeactivating = 110
	devFailed       = 120

	acActivating   = 1
	acActivated    = 2
	acDeactivating = 3
	acDeactivated  = 4

	flagIsController = 0x1 // NM_ACTIVATION_STATE_FLAG_IS_MASTER
	flagIP4Ready     = 0x8
	flagIP6Ready     = 0x10

	// CheckpointRollback's result per device (NMRollbackResult).
	rollbackOK     = 0
	rollbackFailed = 3
)

// activation is one active connection as waitActive sees it: its state,
// its device's state and its state flags.
type activation struct {
	conn, dev, flags uint32
}

// activationVerdict says whether an activation is done, failed, or still
// under way.
type activationVerdict int

const (
	activationPending activationVerdict = iota
	activationDone
	activationFailed
)

// judgeActivation is nmstate's judgement of an activation: activated, or
// activating past IP configuration when what is left may take long (a
// controller waiting for ports, a family waiting for DHCP or autoconf).
// A family with static addresses must be ready (NetworkManager has
// committed its addresses and routes): before that the kernel shows the
// device without them, and a route through it cannot be applied or even
// merged (its next hop has the family disabled). mayPend4 and mayPend6
// say which families may still be pending (profileMayPend).
func judgeActivation(a activation, mayPend4, mayPend6 bool) activationVerdict {
	switch {
	case a.conn == acActivated:
		return activationDone
	case a.conn == acDeactivating || a.conn == acDeactivated || a.dev == devFailed:
		return activationFailed
	case a.conn != acActivating || a.dev < devIPConfig || a.dev > devActivated:
		return activationPending
	case a.flags&flagIsController != 0:
		return activationDone
	case (mayPend4 || a.flags&flagIP4Ready != 0) && (mayPend6 || a.flags&flagIP6Ready != 0):
		return activationDone
	}
	return activationPending
}

// profileMayPend says whether a profile's family may still be pending
// when its activation counts as done: dynamic (DHCP, autoconf), or with
// nothing of ours to configure (disabled, ignored, no such setting: a
// port).
func profileMayPend(s Settings, family string) bool {
	method, _ := s[family]["method"].Value().(string)
	switch method {
	case "", "auto", "dhcp", "disabled", "ignore":
		return true
	}
	return false
}

// rollbackSettling says whether a device NetworkManager rolled back is
// still on its way to its final state: activating (every state from
// prepare up to activated: in IP configuration and IP check its
// addresses are not all there yet) or deactivating.
func rollbackSettling(devState uint32) bool {
	return devState >= devPrepare && devState < devActivated || devState == devDeactivating
}
