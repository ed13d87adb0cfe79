package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// nsPrefix starts the name of every namespace this package creates; the
// creating PID follows, so leftovers of a killed run can be recognised.
const nsPrefix = "knmb-"

// namespace is one named network namespace made with `ip netns add`
// (iproute2 makes the same /run/netns bind mount the engine opens).
type namespace struct {
	ip   string
	Name string
}

// newNamespace creates a fresh named namespace with loopback up, after
// removing namespaces left by dead runs of this package.
func newNamespace(ctx context.Context, ip string) (*namespace, error) {
	sweepStale(ctx, ip)
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	n := &namespace{ip: ip, Name: fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), hex.EncodeToString(b))}
	if err := run(ctx, ip, "netns", "add", n.Name); err != nil {
		return nil, err
	}
	if err := run(ctx, ip, "-n", n.Name, "link", "set", "lo", "up"); err != nil {
		return nil, errors.Join(err, n.remove())
	}
	return n, nil
}

// remove deletes the namespace. It first deletes the namespace's links
// and waits for that: the kernel dismantles a deleted namespace's links in
// the background under the RTNL lock, which would slow down whatever runs
// next (the next timed run). It runs with its own
// context so a cancelled measurement still cleans up.
func (n *namespace) remove() error {
	ctx := context.Background()
	flushErr := n.flushLinks(ctx)
	if err := run(ctx, n.ip, "netns", "delete", n.Name); err != nil {
		return errors.Join(flushErr, err)
	}
	return nil
}

// flushGroup is the link group flushLinks moves links into.
const flushGroup = "77"

// flushLinks deletes every link but loopback in one kernel batch: it moves
// them into flushGroup and deletes the group (one RTM_DELLINK, so the
// kernel unregisters them together, as a namespace's own teardown does,
// instead of one synchronisation per link).
func (n *namespace) flushLinks(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, n.ip, "-n", n.Name, "-j", "link", "show").Output()
	if err != nil {
		return fmt.Errorf("listing links of %s: %w", n.Name, err)
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return fmt.Errorf("listing links of %s: %w", n.Name, err)
	}
	var lines []string
	for _, l := range links {
		if l.Name != "lo" {
			lines = append(lines, "link set dev "+l.Name+" group "+flushGroup)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, n.ip, "-n", n.Name, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("grouping links of %s: %w: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	return run(ctx, n.ip, "-n", n.Name, "link", "delete", "group", flushGroup)
}

// batch runs `ip -n NS -batch FILE`.
func (n *namespace) batch(ctx context.Context, file string) error {
	return run(ctx, n.ip, "-n", n.Name, "-batch", file)
}

// sweepStale removes this package's namespaces whose creating process has
// exited; errors are ignored (it is housekeeping).
func sweepStale(ctx context.Context, ip string) {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), nsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			_ = run(ctx, ip, "netns", "delete", e.Name())
		}
	}
}

// run runs an iproute2 command and returns its error with its stderr.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
