package labnet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// nameSep separates a lab's name from the rest of its namespace names. It
// cannot occur in a lab name, so the namespaces of lab "a" are never
// mistaken for those of lab "a-b".
const nameSep = "_"

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// ValidateName checks a lab or node name used in namespace names: lower
// case letters, digits and inner dashes, at most 32 characters.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a valid name (lower case letters, digits and inner dashes, at most 32 characters)", name)
	}
	return nil
}

// NamespaceName is the name under /run/netns of a lab's namespace: the
// switch ("switch") or a node (its name).
func NamespaceName(lab, suffix string) string { return Prefix + nsSuffix(lab, suffix) }

// nsSuffix is what newNS appends to Prefix: "" (random) without a lab name.
func nsSuffix(lab, suffix string) string {
	if lab == "" {
		return ""
	}
	return lab + nameSep + suffix
}

// nsDir is where the node namespace files live, under the switch's dir.
func (s *Switch) nsDir() string { return filepath.Join(s.Dir, "ns") }

// privateNSDir makes the directory of the UTS namespace files a mount
// point of its own with private propagation, so the pins neither leak into
// nor are covered by other mount namespaces.
func (s *Switch) privateNSDir() error {
	dir := s.nsDir()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("namespace dir: %w", err)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	return nil
}

// nodeNamespaces creates the node's mount and UTS namespaces. The node's
// resolv.conf is first bind-mounted onto itself: a writer replacing it by
// rename then gets EBUSY and rewrites it in place (as on hosts where
// resolv.conf is a bind mount), so the bind on /etc/resolv.conf inside the
// node's mount namespace never goes stale.
//
// The UTS namespace is pinned by a bind mount of its file; the mount
// namespace is held by an open file descriptor instead (Node.MountNS is
// its /proc/PID/fd path). A bind mount of a mount namespace file is
// refused with EINVAL unless the binding process's own mount namespace is
// older than the pinned one (fs/namespace.c, mnt_ns_loop: "current's
// ns_id >= the target's ns_id" means a possible loop). Since Linux 6.18
// namespace ids come from per-CPU batches of 4096 (gen_cookie_next), so a
// namespace made later on another CPU can have the smaller id: inside a
// container — any mount namespace but the initial one, whose id is fixed
// and smallest — the bind failed at random, depending on which CPU each
// namespace was made on. A file descriptor has no such rule.
func (s *Switch) nodeNamespaces(n *Node) error {
	if err := unix.Mount(n.ResolvConf, n.ResolvConf, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s: %w", n.ResolvConf, err)
	}
	n.mounts = append(n.mounts, n.ResolvConf)
	uts := filepath.Join(s.nsDir(), n.Name+".uts")
	if err := os.WriteFile(uts, nil, 0o400); err != nil {
		return fmt.Errorf("namespace file: %w", err)
	}
	// A thread of its own unshares; this goroutine, still in the caller's
	// mount namespace, takes hold of the new namespaces (the namespace's
	// own thread cannot pin by bind mount: its mounts stay in its
	// namespace).
	type made struct {
		tid int
		err error
	}
	madec := make(chan made, 1)
	pinned := make(chan struct{})
	defer close(pinned)
	go func() {
		// Never unlocked: the thread ends with this goroutine, it cannot
		// return to the caller's mount namespace.
		runtime.LockOSThread()
		madec <- made{unix.Gettid(), enterNodeNamespaces(n, s.nsDir())}
		<-pinned
	}()
	m := <-madec
	if m.err != nil {
		return m.err
	}
	task := fmt.Sprintf("/proc/%d/task/%d/ns/", os.Getpid(), m.tid)
	mnt, err := os.Open(task + "mnt")
	if err != nil {
		return fmt.Errorf("holding the mount namespace: %w", err)
	}
	n.mntNS = mnt
	n.MountNS = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), mnt.Fd())
	if err := unix.Mount(task+"uts", uts, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("pin uts namespace on %s: %w", uts, err)
	}
	n.mounts = append(n.mounts, uts)
	n.UTSNS = uts
	return nil
}

// enterNodeNamespaces runs on a locked thread that is discarded afterwards.
func enterNodeNamespaces(n *Node, nsDir string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare mount and uts namespaces: %w", err)
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	// The other nodes' namespace files are none of this node's business,
	// and holding them would keep their namespaces alive.
	if err := unix.Unmount(nsDir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s in the node's mount namespace: %w", nsDir, err)
	}
	if err := unix.Mount(n.ResolvConf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on /etc/resolv.conf: %w", n.ResolvConf, err)
	}
	if err := unix.Sethostname([]byte(n.Name)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	return nil
}

// unmount removes the node's host-side mounts, last first, and lets go
// of its mount namespace.
func (n *Node) unmount() error {
	var errs []error
	if n.mntNS != nil {
		if err := n.mntNS.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the mount namespace: %w", err))
		}
		n.mntNS = nil
	}
	for i := len(n.mounts) - 1; i >= 0; i-- {
		if err := unix.Unmount(n.mounts[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", n.mounts[i], err))
		}
	}
	n.mounts = nil
	return errors.Join(errs...)
}

// MountsUnder returns the mount points at or below dir in the calling
// thread's mount namespace, deepest first. It reads the thread's own view:
// /proc/self is the main thread's, which may be a thread that made a node's
// mount namespace (a goroutine locked to the main thread and exiting
// locked wedges the thread instead of ending it).
func MountsUnder(dir string) ([]string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return mountsUnder(dir)
}

// mountsUnder is MountsUnder on an already locked thread.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mps, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mps {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// Namespaces returns the names under /run/netns of a lab's namespaces.
func Namespaces(lab string) ([]string, error) {
	if err := ValidateName(lab); err != nil {
		return nil, fmt.Errorf("lab name: %w", err)
	}
	ents, err := os.ReadDir(nsrun.RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", nsrun.RunDir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix+lab+nameSep) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ProcessesIn returns the PIDs of the processes whose network namespace is
// the one at path.
func ProcessesIn(path string) ([]int, error) {
	var want unix.Stat_t
	if err := unix.Stat(path, &want); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", path, err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Sweep removes what a lab named lab left behind after its owner died:
// it kills (by PID) the processes running inside the lab's network
// namespaces, removes those namespaces, and detaches every mount below dir
// (the lab's directory: the node namespace files and resolv.conf binds).
// It touches nothing else.
func Sweep(lab, dir string) error {
	names, err := Namespaces(lab)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		path := filepath.Join(nsrun.RunDir, name)
		pids, err := ProcessesIn(path)
		if err != nil {
			errs = append(errs, err)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			waitGone(pid, 5*time.Second)
		}
	}
	if dir != "" {
		if err := unmountUnder(dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range names {
		if err := nsrun.Remove(nsrun.File(name)); err != nil {
			errs = append(errs, fmt.Errorf("removing namespace %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// waitGone waits until pid no longer exists (or has become a zombie of
// somebody else's), for at most d.
func waitGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
