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
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	runtime.LockOSThread()
	// Unlocking on return keeps the thread for the runtime; by then every
	// child has been killed and reaped.
	defer runtime.UnlockOSThread()
	for r := range s.reqs {
		r.err <- r.cmd.Start()
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
