package labnet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// LLDPSystemName is the system name the lab switch announces over LLDP.
const LLDPSystemName = "lab-switch"

// lldpdPath is Debian's lldpd (package lldpd); lldpcli comes with it.
const lldpdPath = "/usr/sbin/lldpd"

// startLLDP starts lldpd in the switch namespace on the node ports
// (named n<seq>-<i>, added later: lldpd follows new interfaces), then
// names the switch and shortens the transmit interval so a node that
// turns LLDP on hears the switch within seconds. lldpcli is setuid to
// lldpd's user, so the socket lives in a temporary directory of its own
// that user can reach (the switch's directory may sit under a private
// one); Close removes it.
func (s *Switch) startLLDP(ctx context.Context) error {
	dir, err := os.MkdirTemp("", Prefix+"lldpd-")
	if err != nil {
		return err
	}
	s.lldpDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	sock := filepath.Join(dir, "lldpd.socket")
	log, err := os.Create(filepath.Join(dir, "lldpd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// lldpd stays paused until the lldpcli it runs at start has read
	// this file (-O), so its first LLDPDU already names the switch, not
	// this machine's hostname (what a frame sent before a later
	// `lldpcli configure` carried on a loaded machine).
	conf := filepath.Join(dir, "lldpd.conf")
	if err := os.WriteFile(conf, []byte("configure system hostname "+LLDPSystemName+"\nconfigure lldp tx-interval 5\n"), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(lldpdPath, "-d", "-u", sock, "-I", "n*", "-O", conf)
	cmd.Stdout, cmd.Stderr = log, log
	release, err := s.NS.startKeptThread(cmd)
	if err != nil {
		return fmt.Errorf("starting lldpd: %w", err)
	}
	s.releaseThreads = append(s.releaseThreads, release)
	s.lldpd, s.lldpEnd = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.lldpEnd)
	}()
	lldpcli := func(args ...string) error {
		return s.NS.Do(func() error {
			out, err := exec.Command("/usr/sbin/lldpcli", append([]string{"-u", sock}, args...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("lldpcli %v: %w: %s", args, err, out)
			}
			return nil
		})
	}
	// The socket appears once lldpd runs.
	deadline := time.Now().Add(s.Options.StartTimeout)
	for {
		err := lldpcli("configure", "system", "hostname", LLDPSystemName)
		if err == nil {
			break
		}
		select {
		case <-s.lldpEnd:
			b, _ := os.ReadFile(filepath.Join(dir, "lldpd.log"))
			return fmt.Errorf("lldpd exited at start: %s", b)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lldpd did not answer: %w", err)
		}
	}
	if err := lldpcli("configure", "lldp", "tx-interval", "5"); err != nil {
		return err
	}
	// lldpd resumes only when the lldpcli it runs itself succeeds, and it
	// does not check that: in the qemu guest's lab it stayed paused, no
	// LLDPDU ever left. Resuming here is a no-op where it did.
	return lldpcli("resume")
}
