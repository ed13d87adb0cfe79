// Package nmpolicy owns the capture language of NodeNetworkConfigurationPolicy
// (spec.capture expressions and the {{ capture.NAME.PATH }} templates of
// spec.desiredState), as specified in specs/capture.md.
//
// It works on generic state documents (map[string]any, []any and scalars as
// decoded from YAML or JSON, normalised by Normalize) and knows nothing of the
// nmstate schema: validating the rendered state is the caller's job.
//
// The package is pure: no I/O, no logging, no context, no clock. Callers pass
// the evaluation time in, so results are reproducible.
package nmpolicy
