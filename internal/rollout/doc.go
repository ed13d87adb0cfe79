// Package rollout owns the cluster-wide decisions about one policy: its
// aggregated status (Available, Degraded, Progressing, Ignored and their
// messages), which enactments get a rollout permit, which are told to abort,
// which permits are taken back, and which enactments are garbage.
//
// Every decision is a pure function of values (the policy, the nodes, which
// nodes run a handler, the policy's enactments, the time): no API calls, no
// clock, no logging. internal/controller gathers the inputs from its cache,
// calls these functions and performs the writes. The wire protocol between
// the controller and the handlers (annotation names and meanings) is defined
// here and described in docs/rollout.md.
package rollout
