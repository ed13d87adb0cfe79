// Command nmstatectl is knmstate's node-local network state tool. Its verbs and
// flags follow upstream nmstatectl so scripts and muscle memory carry over;
// they live in internal/nmstatectl, which knmstate also runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/knmstate/knmstate/internal/nmstatectl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := nmstatectl.NewCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		var ee *nmstatectl.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.Code)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
