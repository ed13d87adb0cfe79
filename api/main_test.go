package api

import (
	"os"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// env is the control plane every API test of this package shares; tests
// use distinct object names so they do not interfere.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
