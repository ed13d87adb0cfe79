package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/knmstate/knmstate/internal/testbed/lab/remoteexec"
	"github.com/knmstate/knmstate/internal/testbed/labnet"
)

// Up starts the supervisor of a new lab, detached (own session, output to
// DIR/lab.log), and waits until the lab is Ready: every node has a
// NodeNetworkState (when the binary has a handler). It returns the lab's
// state; on failure the lab is taken down again.
func Up(ctx context.Context, opts Options) (*State, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("lab options: %w", err)
	}
	if pid, ok := supervisorPID(opts.Dir); ok {
		return nil, fmt.Errorf("a lab is already running in %s (supervisor pid %d): `knmstate lab down --dir %s` first", opts.Dir, pid, opts.Dir)
	}
	if names, err := labnet.Namespaces(opts.Name); err != nil {
		return nil, err
	} else if len(names) > 0 {
		return nil, fmt.Errorf("namespaces of a lab named %s exist (%s): another lab has this name, or one died; `knmstate lab down --name %s` removes them",
			opts.Name, strings.Join(names, ", "), opts.Name)
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(opts.Dir, logFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lab log: %w", err)
	}
	defer log.Close()
	args := []string{"lab", "run", "--dir", opts.Dir, "--name", opts.Name, "--nodes", strconv.Itoa(opts.Nodes)}
	if opts.APIServer != "" {
		args = append(args, "--kube-apiserver", opts.APIServer)
	}
	if opts.Nmstatectl != "" {
		args = append(args, "--nmstatectl", opts.Nmstatectl)
	}
	if opts.Heartbeat != DefaultHeartbeat {
		args = append(args, "--heartbeat", opts.Heartbeat.String())
	}
	for _, a := range opts.HandlerArgs {
		args = append(args, "--handler-arg="+a)
	}
	if opts.Kubelet {
		args = append(args, "--kubelet", "--kube-bin-dir", opts.KubeBinDir, "--images", opts.Images, "--install", opts.Install)
		for _, d := range opts.MoreImages {
			args = append(args, "--more-images", d)
		}
		if opts.OpenShiftPlatform != "" {
			args = append(args, "--openshift-platform", opts.OpenShiftPlatform)
		}
	}
	if opts.NoOVS {
		args = append(args, "--no-ovs")
	}
	if opts.Backend != "" {
		args = append(args, "--backend", opts.Backend)
	}
	if opts.Kernel != "" {
		args = append(args, "--kernel", opts.Kernel, "--kernel-cache", opts.KernelCache,
			"--guest-memory", strconv.Itoa(opts.GuestMemory), "--guest-cpus", strconv.Itoa(opts.GuestCPUs))
	}
	if opts.FirstBootDir != "" {
		args = append(args, "--first-boot-dir", opts.FirstBootDir)
	}
	if opts.NMOVSBuild != "" {
		args = append(args, "--nm-ovs-build", opts.NMOVSBuild)
	}
	cmd := exec.Command(opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/"
	// Its own session: it outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start lab supervisor: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	timeout := 5 * time.Minute
	if opts.Kernel != "" {
		timeout = 15 * time.Minute // a guest's boot and everything in it runs slowly
	}
	st, err := waitReady(ctx, opts.Dir, exited, timeout)
	if err != nil {
		// The logs go with the directory: their ends go into the error.
		tail := logTail(filepath.Join(opts.Dir, logFile), 20)
		for _, glob := range []string{"nodes/*/*.log", "controller.log", "guest/console.log"} {
			logs, _ := filepath.Glob(filepath.Join(opts.Dir, glob))
			for _, l := range logs {
				tail += logTail(l, 8)
			}
		}
		derr := Down(context.WithoutCancel(ctx), opts.Name, opts.Dir)
		return nil, errors.Join(fmt.Errorf("lab up: %w%s", err, tail), derr)
	}
	return st, nil
}

// prepareDir creates the lab directory, or accepts an existing one that
// is empty or the remains of a lab (its log), never someone's data.
func prepareDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("lab dir: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	for _, e := range ents {
		if e.Name() != logFile {
			return fmt.Errorf("lab dir %s is not empty (has %s): give a new or empty --dir, or `knmstate lab down --dir %s`", dir, e.Name(), dir)
		}
	}
	return nil
}

func waitReady(ctx context.Context, dir string, exited <-chan struct{}, timeout time.Duration) (*State, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		st, err := ReadState(dir)
		if err == nil {
			switch st.Phase {
			case PhaseReady:
				return st, nil
			case PhaseFailed:
				return nil, errors.New(st.Error)
			}
		}
		select {
		case <-exited:
			return nil, errors.New("the supervisor exited during start-up")
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the lab: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// supervisorPID returns the PID in DIR/lab.pid if that process is alive
// and is the supervisor of this directory.
func supervisorPID(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, mentions(pid, dir)
}

// mentions reports whether the live process pid has dir, or a path below
// it, among its arguments: every process of a lab does.
func mentions(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return false
	}
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			return false // a zombie is gone already
		}
	}
	for _, arg := range bytes.Split(b, []byte{0}) {
		a := string(arg)
		if a == dir || strings.HasSuffix(a, "="+dir) || strings.Contains(a, dir+"/") {
			return true
		}
	}
	return false
}

// processesOf returns the live processes mentioning dir, other than the
// caller and its ancestors (a shell script that runs `lab down --dir DIR`
// mentions DIR too, and is not the lab's); with sid > 0, only those of
// that session (the supervisor's: every process of the lab is in it, a
// user's `tail -f DIR/lab.log` is not); none with sid < 0.
func processesOf(dir string, sid int) []int {
	if sid < 0 {
		return nil
	}
	mine := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !mine[pid]; pid = parent(pid) {
		mine[pid] = true
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || mine[pid] {
			continue
		}
		if mentions(pid, dir) && (sid <= 0 || session(pid) == sid) {
			out = append(out, pid)
		}
	}
	return out
}

// parent returns the parent PID of pid, 0 if unknown.
func parent(pid int) int { return statField(pid, 1) }

// session returns the session ID of pid, 0 if unknown.
func session(pid int) int { return statField(pid, 3) }

// statField returns the i-th numeric field after the command name in
// /proc/PID/stat (0: state, 1: ppid, 2: pgrp, 3: session).
func statField(pid, i int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	j := bytes.LastIndexByte(b, ')')
	if j < 0 {
		return 0
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) <= i {
		return 0
	}
	v, _ := strconv.Atoi(f[i])
	return v
}

// Down stops the lab in dir: SIGTERM to its supervisor, which removes
// what it built; then whatever is left is removed by name and directory
// (a supervisor that was killed): processes, namespaces, mounts, and the
// directory itself. name is used when the lab's state file is gone.
func Down(ctx context.Context, name, dir string) error {
	if st, err := ReadState(dir); err == nil {
		name = st.Name
	}
	if name == "" {
		name = DefaultName
	}
	// The supervisor's PID is its session's ID, shared by all the lab's
	// processes; the pidfile outlives a supervisor that was killed.
	sid := 0
	if b, err := os.ReadFile(filepath.Join(dir, pidFile)); err == nil {
		sid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid, ok := supervisorPID(dir); ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitExit(ctx, pid, dir, time.Minute) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitExit(ctx, pid, dir, 5*time.Second)
		}
	}
	var errs []error
	if sid > 0 {
		for _, pid := range processesOf(dir, sid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitExit(ctx, pid, dir, 5*time.Second)
		}
	}
	if err := labnet.Sweep(name, dir); err != nil {
		errs = append(errs, err)
	}
	// Kubelet mode: the nodes' cgroups, once their processes are gone
	// (Sweep ended every node's init, and its PID namespace with it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := removeLabCgroups(name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
	}
	if sid == 0 {
		sid = -1 // no supervisor known: no process is known to be the lab's
	}
	if left := leftovers(name, dir, sid); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// Leftovers lists what exists of the lab named name in dir: processes
// (any that mentions dir), namespaces, mounts, the directory. Empty after
// a complete Down.
func Leftovers(name, dir string) []string { return leftovers(name, dir, 0) }

// leftovers is Leftovers counting only the processes of session sid (any
// session when 0, none when negative).
func leftovers(name, dir string, sid int) []string {
	var out []string
	for _, pid := range processesOf(dir, sid) {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	if names, err := labnet.Namespaces(name); err == nil {
		for _, n := range names {
			out = append(out, "namespace "+n)
		}
	}
	if mps, err := labnet.MountsUnder(dir); err == nil {
		for _, m := range mps {
			out = append(out, "mount "+m)
		}
	}
	if hs, err := cgroupHierarchies(); err == nil {
		for _, c := range labCgroups(hs, name) {
			out = append(out, "cgroup "+c)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		out = append(out, "directory "+dir)
	}
	return out
}

// waitExit waits until pid no longer runs as a process of dir.
func waitExit(ctx context.Context, pid int, dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for mentions(pid, dir) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Exec runs args inside a node of the lab in dir, in its network, mount
// (its /etc/resolv.conf) and UTS (its hostname) namespaces, with the given
// streams, and returns the command's exit status. In guest mode the guest's
// agent runs it (no terminal: stdin is a stream).
func Exec(ctx context.Context, dir, node string, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return 0, errors.New("lab exec: no command given (knmstate lab exec NODE -- CMD...)")
	}
	st, err := ReadState(dir)
	if err != nil {
		return 0, err
	}
	if _, err := st.Node(node); err != nil {
		return 0, err
	}
	if st.Guest != nil {
		c, err := guestClientFor(st)
		if err != nil {
			return 0, err
		}
		return remoteexec.Run(ctx, c.addr, c.token, remoteexec.Request{Target: node, Args: args}, stdin, stdout, stderr)
	}
	cmd, err := execCommand(st, node, args)
	if err != nil {
		return 0, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("lab exec: %w", err)
	}
	return 0, nil
}

// execCommand returns nsenter running args inside a node's namespaces of
// this machine.
func execCommand(st *State, node string, args []string) (*exec.Cmd, error) {
	n, err := st.Node(node)
	if err != nil {
		return nil, err
	}
	ns := []string{"--net=/run/netns/" + n.NetNS}
	if n.MountNS != "" {
		ns = append(ns, "--mount="+n.MountNS)
	}
	if n.UTSNS != "" {
		ns = append(ns, "--uts="+n.UTSNS)
	}
	if st.Kubelet {
		// The node's own PID namespace: its /proc is that namespace's.
		for _, p := range st.Processes {
			if p.Name == "node-init/"+n.Name && p.PID > 0 {
				ns = append(ns, fmt.Sprintf("--pid=/proc/%d/ns/pid", p.PID))
			}
		}
	}
	cmd := exec.Command("nsenter", append(append(ns, "--"), args...)...)
	// nmcli on the node talks to the node's NetworkManager, as on a
	// real node where the system bus is that node's.
	if env := execEnv(n); env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd, nil
}

// Status describes a running lab: its state, whether each process is
// alive, and each node's Ready condition and NodeNetworkState as the API
// reports them.
func Status(ctx context.Context, dir string, w io.Writer) error {
	st, err := ReadState(dir)
	if err != nil {
		return err
	}
	sup := "not running"
	if pid, ok := supervisorPID(dir); ok {
		sup = fmt.Sprintf("running (pid %d)", pid)
	}
	fmt.Fprintf(w, "lab %s in %s: %s, supervisor %s\n", st.Name, st.Dir, st.Phase, sup)
	if st.Error != "" {
		fmt.Fprintf(w, "error: %s\n", st.Error)
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if st.ReadyAfter > 0 {
		fmt.Fprintf(w, "ready after %v\n", time.Duration(st.ReadyAfter).Round(time.Millisecond))
	}
	if g := st.Guest; g != nil {
		fmt.Fprintf(w, "guest: qemu (TCG), Debian kernel %s, %d MiB, %d CPUs; agent %s; console %s\n", g.Kernel, g.MemoryMiB, g.CPUs, g.Agent, g.Console)
		fmt.Fprintf(w, "kubeconfig: %s (API server %s on this machine; the nodes reach it at https://%s:%d, forwarded by the guest to %s)\n\n",
			st.Kubeconfig, st.APIServer, lanPrefix.Addr(), apiPort, g.APIServer)
	} else {
		fmt.Fprintf(w, "kubeconfig: %s (forwarder %s -> %s in %s)\n\n", st.Kubeconfig, st.Forwarder, st.APIServer, st.SwitchNS)
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPID\tSTATUS\tWHERE")
	fmt.Fprintf(tw, "supervisor\t%d\t%s\thost\n", st.PID, sup)
	listed := map[int]bool{}
	for _, p := range st.Processes {
		listed[p.PID] = true
		status := p.Status
		if p.PID > 0 && !p.Guest && !alive(p.PID) {
			status = "gone"
		}
		if p.Restarts > 0 {
			status += fmt.Sprintf(" (%d restarts)", p.Restarts)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Name, p.PID, status, p.Where)
	}
	if sw := "/run/netns/" + st.SwitchNS; st.SwitchNS != "" {
		if pids, err := labnet.ProcessesIn(sw); err == nil {
			for _, pid := range pids {
				if listed[pid] {
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\trunning\tswitch netns %s\n", comm(pid), pid, st.SwitchNS)
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w)

	ready, nns := apiView(ctx, st)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tNETNS\tREADY\tNNS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Role, n.Address, n.NetNS, ready[n.Name], nns[n.Name])
	}
	return tw.Flush()
}

// apiView reads the nodes' Ready status and NodeNetworkState presence
// through the lab's kubeconfig; "?" when the API cannot be read.
func apiView(ctx context.Context, st *State) (ready, nns map[string]string) {
	ready, nns = map[string]string{}, map[string]string{}
	for _, n := range st.Nodes {
		ready[n.Name], nns[n.Name] = "?", "?"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		return
	}
	cfg.Timeout = 3 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	if nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready[n.Name] = string(c.Status)
				}
			}
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return
	}
	if list, err := dyn.Resource(nnsResource).List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range st.Nodes {
			nns[n.Name] = "no"
		}
		for _, o := range list.Items {
			nns[o.GetName()] = "yes"
		}
	}
	return
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("\n--- %s (tail) ---\n%s", path, strings.Join(lines, "\n"))
}
