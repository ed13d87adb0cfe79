package handler

import (
	"context"
	"sync"
)

// changeFanout shares one subscription to the node's network changes
// between the handler's readers (the NodeNetworkState reporter and drift
// detection). Each kernel subscription costs an inotify instance (for
// resolv.conf), and inotify instances are limited per user, not per
// process (fs.inotify.max_user_instances, 128 by default): with one
// subscription per reader, 50 lab nodes (handler and node runtime each)
// took 153 of them, and handlers failed to start.
//
// Like the source, every subscriber's channel coalesces: one pending
// signal stands for any number of changes, so a slow subscriber neither
// blocks the others nor the source.
type changeFanout struct {
	mu     sync.Mutex
	subs   map[chan struct{}]func() bool // the channel → stop of its context.AfterFunc
	closed bool
	done   chan struct{}
}

// newChangeFanout forwards src's signals to the subscribers until src is
// closed; then every subscriber's channel is closed, as a subscription
// that failed for good closes its own.
func newChangeFanout(src <-chan struct{}) *changeFanout {
	f := &changeFanout{subs: map[chan struct{}]func() bool{}, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for range src {
			f.broadcast()
		}
		f.closeAll()
	}()
	return f
}

// broadcast signals every subscriber without waiting for any.
func (f *changeFanout) broadcast() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closeAll closes every subscriber, and makes later subscriptions closed.
func (f *changeFanout) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for ch, stop := range f.subs {
		stop()
		close(ch)
		delete(f.subs, ch)
	}
}

// Subscribe returns a channel that signals the changes after this call;
// it is closed when ctx ends or the source is closed. It has the shape of
// the kernel backend's Watch.
func (f *changeFanout) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		close(ch)
		return ch, nil
	}
	f.subs[ch] = context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[ch]; ok {
			delete(f.subs, ch)
			close(ch)
		}
	})
	return ch, nil
}

// Done is closed once the source is closed and drained: the source's
// goroutines are gone then.
func (f *changeFanout) Done() <-chan struct{} { return f.done }
