package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// nodeFirstBootDir is the node's /etc/nmstate/openshift.
func (s *supervisor) nodeFirstBootDir(node string) string {
	return filepath.Join(s.opts.Dir, "nodes", node, "etc", "nmstate", "openshift")
}

// installFirstBootFiles gives every node a copy of FirstBootDir's .yml
// files, as a MachineConfig writes them at a machine's first boot. The
// copy (and the applied record next to it) survives lab reboot, as /etc
// survives a reboot.
func (s *supervisor) installFirstBootFiles(nodes []NodeState) error {
	entries, err := os.ReadDir(s.opts.FirstBootDir)
	if err != nil {
		return fmt.Errorf("first-boot-dir: %w", err)
	}
	for _, n := range nodes {
		dst := s.nodeFirstBootDir(n.Name)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".yml") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(s.opts.FirstBootDir, e.Name()))
			if err != nil {
				return fmt.Errorf("first-boot-dir: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// firstBoot runs the node's boot-time apply (`nmstatectl first-boot`, as
// OpenShift's unit would) and waits for it. A failure is a note, not a
// lab failure: the node boots on without its file, as a machine does when
// configure-ovs takes over.
func (s *supervisor) firstBoot(ctx context.Context, n *NodeState) {
	t := time.Now()
	dir := filepath.Join(s.opts.Dir, "nodes", n.Name)
	stateDir := n.RuntimeStateDir
	if stateDir == "" {
		stateDir = filepath.Join(dir, "state")
	}
	logPath := filepath.Join(dir, "first-boot.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.note("node %s: first boot not run: %v", n.Name, err)
		return
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, s.opts.Binary, "nmstatectl",
		"--netns", n.NetNS, "--resolv-conf", n.ResolvConf, "--uts-ns", n.UTSNS,
		"--ovsdb", nodeOVSDB(n), "--ovs-datapath", "netdev", "--state-dir", stateDir,
		"first-boot", "--source-dir", s.nodeFirstBootDir(n.Name), "--probe-dns-host", apiHost)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.hostSpawner.start(cmd); err != nil {
		s.note("node %s: first boot not run: %v", n.Name, err)
		return
	}
	if err := cmd.Wait(); err != nil {
		s.note("node %s: first boot failed (%v; see %s): the node goes on without its file", n.Name, err, logPath)
		return
	}
	s.step("node "+n.Name+": first boot (nmstatectl first-boot)", t)
}
