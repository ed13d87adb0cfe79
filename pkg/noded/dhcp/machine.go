package dhcp

import (
	"fmt"
	"time"
)

// State is where a client is in its lease lifecycle (RFC 2131 figure 5,
// with SELECTING/REQUESTING folded into the Acquire exchange).
type State uint8

const (
	// Init: no lease; acquiring one.
	Init State = iota
	// Bound: lease valid, before T1.
	Bound
	// Renewing: after T1, asking the server that granted the lease.
	Renewing
	// Rebinding: after T2, asking any server.
	Rebinding
	// Stopped: the client was stopped; nothing more happens.
	Stopped
)

func (s State) String() string {
	switch s {
	case Init:
		return "init"
	case Bound:
		return "bound"
	case Renewing:
		return "renewing"
	case Rebinding:
		return "rebinding"
	case Stopped:
		return "stopped"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Action is what the driver must do next.
type Action uint8

const (
	// Wait until Step.At, then ask again.
	Wait Action = iota
	// Acquire a new lease (DISCOVER/REQUEST, SOLICIT/REQUEST).
	Acquire
	// Renew the lease with its server (unicast REQUEST, RENEW).
	Renew
	// Rebind the lease with any server (broadcast REQUEST, REBIND).
	Rebind
	// Expire: the lease is gone (lifetime over or server said no); tell
	// the runtime to remove it. Step.Lease is the lease that ended.
	Expire
	// Idle: the client is stopped.
	Idle
)

func (a Action) String() string {
	return [...]string{"wait", "acquire", "renew", "rebind", "expire", "idle"}[a]
}

// Step is one decision of the Machine. For Wait, At is when to ask again;
// for Acquire, Renew and Rebind, At is the deadline of the exchange (when
// the next phase begins), zero meaning none.
type Step struct {
	Action Action
	At     time.Time
	Lease  Lease
}

// Retry bounds. RFC 2131 4.4.5 retries a failed renew or rebind after half
// the time remaining in the phase, but not sooner than a minute.
const (
	minPhaseRetry  = 60 * time.Second
	firstBackoff   = time.Second
	maxBackoff     = 64 * time.Second
	acquireTimeout = 60 * time.Second
)

// Machine is the lease lifecycle of one client as a pure value: it is told
// the time and the outcome of each exchange, and says what to do next. It
// does no I/O and reads no clock.
type Machine struct {
	state    State
	lease    Lease
	retryAt  time.Time // no exchange before this time in the current state
	failures int       // consecutive failed acquisitions, for backoff
	lost     bool      // the lease ended; Next reports Expire once
}

// State reports the current state.
func (m *Machine) State() State { return m.state }

// Lease returns the current lease, if the machine holds one.
func (m *Machine) Lease() (Lease, bool) {
	switch m.state {
	case Bound, Renewing, Rebinding:
		return m.lease, true
	}
	return Lease{}, false
}

// Next says what to do at time now. It moves Bound to Renewing at T1,
// Renewing to Rebinding at T2, and any of them to Init at expiry.
func (m *Machine) Next(now time.Time) Step {
	if m.lost {
		m.lost = false
		return Step{Action: Expire, Lease: m.lease}
	}
	switch m.state {
	case Stopped:
		return Step{Action: Idle}
	case Init:
		if now.Before(m.retryAt) {
			return Step{Action: Wait, At: m.retryAt}
		}
		return Step{Action: Acquire, At: now.Add(acquireTimeout)}
	}
	l := m.lease
	switch {
	case !now.Before(l.ExpiresAt()):
		m.state, m.retryAt = Init, time.Time{}
		return Step{Action: Expire, Lease: l}
	case !now.Before(l.RebindAt()):
		if m.state != Rebinding {
			m.state, m.retryAt = Rebinding, time.Time{}
		}
		if now.Before(m.retryAt) {
			return Step{Action: Wait, At: m.retryAt}
		}
		return Step{Action: Rebind, At: l.ExpiresAt()}
	case !now.Before(l.RenewAt()):
		if m.state != Renewing {
			m.state, m.retryAt = Renewing, time.Time{}
		}
		if now.Before(m.retryAt) {
			return Step{Action: Wait, At: m.retryAt}
		}
		return Step{Action: Renew, At: l.RebindAt()}
	default:
		return Step{Action: Wait, At: l.RenewAt()}
	}
}

// Granted records a lease from a successful Acquire, Renew or Rebind. It
// reports whether the address changed from the lease held before (a new
// binding rather than an extension).
func (m *Machine) Granted(l Lease) (changed bool) {
	if m.state == Stopped {
		return false
	}
	held := m.state == Bound || m.state == Renewing || m.state == Rebinding
	changed = !held || m.lease.Address != l.Address
	m.state, m.lease = Bound, l.withDefaultTimers()
	m.retryAt, m.failures, m.lost = time.Time{}, 0, false
	return changed
}

// Failed records a failed exchange at time now. declined means the server
// answered no (DHCPNAK, a DHCPv6 status NoBinding/NotOnLink): the lease
// ends at once. Otherwise the exchange is retried later in the same phase.
func (m *Machine) Failed(now time.Time, declined bool) {
	switch m.state {
	case Init:
		m.failures++
		if declined && m.failures == 1 {
			// A DHCPNAK to our REQUEST (the offered address went to
			// another client first) restarts at once (RFC 2131 3.1);
			// only repeated failures back off.
			m.retryAt = now
			return
		}
		d := firstBackoff << min(m.failures-1, 6)
		m.retryAt = now.Add(min(d, maxBackoff))
	case Renewing, Rebinding, Bound:
		if declined {
			m.state, m.retryAt, m.lost = Init, time.Time{}, true
			return
		}
		end := m.lease.RebindAt()
		if m.state == Rebinding {
			end = m.lease.ExpiresAt()
		}
		wait := max(end.Sub(now)/2, minPhaseRetry)
		m.retryAt = now.Add(wait)
		if m.retryAt.After(end) {
			m.retryAt = end
		}
	}
}

// Stop ends the machine. It returns the lease to release, if one is held.
func (m *Machine) Stop() (Lease, bool) {
	l, ok := m.Lease()
	m.state = Stopped
	return l, ok
}
