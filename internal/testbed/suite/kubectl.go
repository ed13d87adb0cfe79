package suite

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// KubectlPath is this machine's kubectl (Debian's kubernetes-client, which
// make setup installs): the suites change a lab as a user does, with the
// real command.
const KubectlPath = "/usr/bin/kubectl"

// Kubectl runs KubectlPath against one lab.
type Kubectl struct {
	// Kubeconfig is the lab's (lab.State.Kubeconfig).
	Kubeconfig string
}

// Run runs kubectl with args and stdin (none when empty) and returns its
// standard output; its error carries the command, the exit status and
// kubectl's output.
func (k Kubectl) Run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, KubectlPath, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// Try is Run under t's context.
func (k Kubectl) Try(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := testContext(t)
	defer cancel()
	return k.Run(ctx, stdin, args...)
}

// Must is Try without stdin that fails t on an error.
func (k Kubectl) Must(t testing.TB, args ...string) string {
	t.Helper()
	return k.MustIn(t, "", args...)
}

// MustIn is Try that fails t on an error.
func (k Kubectl) MustIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := k.Try(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cleanupTimeout bounds a command run by a test's cleanup.
const cleanupTimeout = 2 * time.Minute

// testContext is t's context while the test runs, and a bounded one in its
// cleanups (t's is cancelled before they run, and they still have to
// delete what the test made).
func testContext(t testing.TB) (context.Context, context.CancelFunc) {
	if ctx := t.Context(); ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.Background(), cleanupTimeout)
}
