package nsrun_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// TestRunDirFirstUseWithIPNetns creates namespaces with Create and with
// `ip netns add` at once on a fresh machine's /run/netns — a directory that
// does not exist yet, on a new tmpfs — and checks that every one can be
// removed again and nothing is left: no file, no mount, no second bind
// mount of /run/netns stacked on the first (the one that covered our files
// and made them EBUSY when iproute2 prepared the directory after us).
func TestRunDirFirstUseWithIPNetns(t *testing.T) {
	if !nstest.InPrivateMountNS(t) {
		return
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatalf("iproute2's ip is needed: %v", err)
	}
	const rounds, each = 10, 4
	for r := range rounds {
		// A fresh /run each round: the first use is what races.
		if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=755"); err != nil {
			t.Fatalf("tmpfs on /run: %v", err)
		}
		var wg sync.WaitGroup
		errc := make(chan error, 2*each)
		ours := make([]string, each)
		for i := range each {
			ours[i] = nsrun.File(fmt.Sprintf("knmt-%d-ours-%d-%d", os.Getpid(), r, i))
			wg.Add(2)
			go func() {
				defer wg.Done()
				if _, err := nsrun.Create(ours[i]); err != nil {
					errc <- fmt.Errorf("Create %s: %w", ours[i], err)
				}
			}()
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("knmt-%d-ip-%d-%d", os.Getpid(), r, i)
				if out, err := exec.Command(ip, "netns", "add", name).CombinedOutput(); err != nil {
					errc <- fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Errorf("round %d: %v", r, err)
		}
		for i := range each {
			if err := nsrun.Remove(ours[i]); err != nil {
				t.Errorf("round %d: removing %s: %v", r, ours[i], err)
			}
			name := fmt.Sprintf("knmt-%d-ip-%d-%d", os.Getpid(), r, i)
			if out, err := exec.Command(ip, "netns", "del", name).CombinedOutput(); err != nil {
				t.Errorf("round %d: ip netns del %s: %v: %s", r, name, err, out)
			}
		}
		if ents, err := os.ReadDir(nsrun.RunDir); err != nil || len(ents) != 0 {
			t.Errorf("round %d: %s holds %v after removal (%v)", r, nsrun.RunDir, ents, err)
		}
		if n := mountsAt(t, nsrun.RunDir); n != 1 {
			t.Errorf("round %d: %d mounts at %s, want 1 (bind mounts stacked)", r, n, nsrun.RunDir)
		}
		if under := mountsBelow(t, nsrun.RunDir); len(under) != 0 {
			t.Errorf("round %d: mounts left below %s: %v", r, nsrun.RunDir, under)
		}
		if err := unix.Unmount("/run", unix.MNT_DETACH); err != nil {
			t.Fatalf("unmounting the round's /run: %v", err)
		}
	}
}

// mountsAt counts the mounts at dir stacked on the newest mount of its
// parent directory (mounts at dir under an older mount of the parent —
// the host's, covered by this round's tmpfs — do not count).
func mountsAt(t *testing.T, dir string) int { return len(visibleStack(mounts(t), dir)) }

// visibleStack returns the IDs of the mounts at dir on top of the newest
// mount of its parent directory, bottom first.
func visibleStack(ms []mount, dir string) []string {
	parent := ""
	for _, m := range ms {
		if m.point == filepath.Dir(dir) {
			parent = m.id
		}
	}
	var stack []string
	for below := parent; ; {
		found := ""
		for _, m := range ms {
			if m.point == dir && m.parent == below {
				found = m.id
			}
		}
		if found == "" {
			return stack
		}
		stack = append(stack, found)
		below = found
	}
}

// mountsBelow lists the mount points below the visible mounts at dir
// (mounts that other test processes made before this one's mount
// namespace went private are on covered mounts and do not count).
func mountsBelow(t *testing.T, dir string) []string {
	ms := mounts(t)
	visible := map[string]bool{}
	for _, id := range visibleStack(ms, dir) {
		visible[id] = true
	}
	var out []string
	for _, m := range ms {
		if visible[m.parent] && strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	return out
}

type mount struct{ id, parent, point string }

func mounts(t *testing.T) []mount {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			out = append(out, mount{fields[0], fields[1], fields[4]})
		}
	}
	return out
}
