package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// RunMain starts one control plane for a test package, points *env at it,
// runs the package's tests and stops it; its result is the exit code for
// TestMain:
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
//
// If a test panics, the deferred Stop does not run; the children then die
// with the test binary and the guard removes the directory.
func RunMain(m *testing.M, env **Env) int {
	e, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: stop:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "testenv: control plane ready in %v\n", e.StartupDuration.Round(1e6))
	*env = e
	return m.Run()
}
