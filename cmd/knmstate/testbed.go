//go:build !notestbed

package main

import "github.com/spf13/cobra"

// testbedCmds are the development commands (`lab`, `bench`, `controlplane`):
// a developer's knmstate has them; the binary a node runs is built with
// -tags notestbed and links none of internal/testbed (docs/architecture.md).
func testbedCmds() []*cobra.Command {
	return []*cobra.Command{newLabCmd(), newBenchCmd(), newControlplaneCmd()}
}
