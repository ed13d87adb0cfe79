// Package benchcmd is `knmstate bench`: the registry of the issue's
// measurements (engine, state model, policy rollout in the lab, NNS
// idleness, handler memory), running a selection of them each under its
// own timeout, and rendering the results as a table and as JSON.
//
// The engine comparisons themselves live in internal/testbed/bench; this package
// only wraps them. The lab-based measurements start their own labs
// (internal/testbed/lab) under the directory they are given and always take them
// down again, also on failure, timeout or interrupt. A measurement that
// cannot be taken (a missing component) yields a row saying why, never a
// made-up number. Nothing here asserts anything about the figures.
package benchcmd
