//go:build unix

package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often a waiting locker retries; flock itself cannot be
// interrupted by a context.
const lockPoll = 50 * time.Millisecond

func flock(ctx context.Context, f *os.File, wait bool) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		if !wait {
			return ErrBusy
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", f.Name(), ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
