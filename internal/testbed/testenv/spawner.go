package testenv

import (
	"os/exec"
	"runtime"
)

// spawner starts child processes from one OS thread that nothing else can
// run on and that lives until the control plane stops. Pdeathsig fires when
// the *thread* that forked a child exits, not the process: forking from an
// ordinary Go thread would let an unrelated goroutine that locks that thread
// and exits locked (the usual way to discard a thread moved into another
// network namespace) kill the control plane in the middle of a test.
//
// With a network namespace, the thread is switched into it for its whole
// life, so every child starts there (a child inherits the forking thread's
// namespace).
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// newSpawner starts the spawner's thread, inside the network namespace at
// netnsPath unless it is "".
func newSpawner(netnsPath string) (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq)}
	ready := make(chan error, 1)
	go s.loop(netnsPath, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return s, nil
}

func (s *spawner) loop(netnsPath string, ready chan<- error) {
	runtime.LockOSThread()
	leave := func() bool { return true }
	if netnsPath != "" {
		var err error
		if leave, err = enterNetNS(netnsPath); err != nil {
			// The thread may be in a namespace it cannot leave: it stays
			// locked and the runtime discards it with this goroutine.
			ready <- err
			return
		}
	}
	ready <- nil
	for r := range s.reqs {
		r.err <- r.cmd.Start()
	}
	// Unlocking on return keeps the thread for the runtime; by then every
	// child has been killed and reaped. A thread that cannot switch back
	// stays locked and is discarded.
	if leave() {
		runtime.UnlockOSThread()
	}
}

// start starts cmd from the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.reqs <- r
	return <-r.err
}

// close ends the spawner's thread; call it only once the children are gone.
func (s *spawner) close() { close(s.reqs) }
