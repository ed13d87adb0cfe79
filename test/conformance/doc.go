// Package conformance holds the kernel engine's conformance tests: every
// upstream nmstate example file (testdata/nmstate-examples, unmodified
// copies) whose features the engine supports is applied with pkg/apply into
// a fresh network namespace, verified, checked for the fixed point (planning
// again against the re-read state gives nothing to do), and undone by its
// cleanup partner. The table in table.go says, per file, where it runs
// (host kernel, qemu kernel lane) or why it is not supported yet;
// docs/support-matrix.md is generated from it (go test ./test/conformance
// -update). test/e2e runs the same scenarios through the handler.
//
// Apart from that table the package has tests only. They must not read
// anything outside testdata at run time (the qemu lane copies testdata
// alone) and must not touch the machine's own namespaces: every change
// happens in namespaces the tests create.
package conformance
