// Package nm is knmstate's NetworkManager backend: on a node where
// NetworkManager runs, it reads the kernel state (through the kernel
// backend, as upstream nmstate reads it with nispor) with NetworkManager's
// view on top (DNS, which backend), and applies a merged state as
// NetworkManager profiles over D-Bus instead of netlink operations, so the
// two never fight over a device.
//
// Profiles are saved to the keyfile directory by default, as upstream's
// nmstatectl saves them; Options.MemoryOnly keeps them under
// NetworkManager's run directory, gone after a reboot (nmstate's
// --memory-only, the ephemeral mode of OpenShift's rebootless design). Profiles are built per interface of the change set by a pure
// function (Profile) from the interface's target configuration, its
// routes, route rules and DNS; they are saved, then activated in
// dependency order (controllers first) and waited for. Whatever the
// profiles cannot express is left to a kernel "touch-up": after the
// activations the kernel backend plans the remaining difference and
// executes it (bridge options NetworkManager 1.42 has no key for, the
// hostname).
//
// It also owns NetworkManager checkpoints (CheckpointCreate with the
// rollback timeout, Destroy on commit, Rollback on failure): a crash of
// the caller still rolls back by NetworkManager's own timer.
//
// It must not decide what to change: the merged state and plan come from
// pkg/nmstate through pkg/apply. It talks only to the bus it was given
// (Options.Bus), never assumes the machine's system bus in tests.
package nm
