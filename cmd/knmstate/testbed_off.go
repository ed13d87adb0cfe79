//go:build notestbed

package main

import "github.com/spf13/cobra"

// testbedCmds is empty in the binary a node runs (-tags notestbed): the lab,
// the bench and the throw-away control plane stay out of it.
func testbedCmds() []*cobra.Command { return nil }
