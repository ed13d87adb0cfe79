package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// guideBlock is one command block of the user guide.
type guideBlock struct {
	file string
	line int
	// kubelet: the block needs knmstate as pods (fence "sh kubelet").
	kubelet bool
	script  string
}

// guideBlocks reads the `sh` blocks of a user guide page in order.
func guideBlocks(t *testing.T, file string) []guideBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []guideBlock
	var cur *guideBlock
	var body []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			if len(info) > 0 && info[0] == "sh" {
				cur = &guideBlock{file: filepath.Base(file), line: n, kubelet: len(info) > 1 && info[1] == "kubelet"}
				body = nil
			} else {
				cur = &guideBlock{} // another block: skipped to its end
			}
		case cur != nil && line == "```":
			if cur.file != "" {
				cur.script = strings.Join(body, "\n") + "\n"
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s: a code block is not closed", file)
	}
	return out
}

// guideScript turns a block into the bash script the test runs: a line
// ending in "# fails" must fail.
func guideScript(block string) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	for _, l := range strings.Split(block, "\n") {
		if cmd, ok := strings.CutSuffix(strings.TrimRight(l, " "), "# fails"); ok {
			fmt.Fprintf(&b, "if %s; then echo 'expected to fail: %s' >&2; exit 1; fi\n", cmd, strings.ReplaceAll(cmd, "'", ""))
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestUserGuide runs every `sh` block of docs/user-guide, page by page in
// order, with the real kubectl against the suite's lab (blocks marked
// `sh kubelet` only on a kubelet-mode lab): the guide's commands are
// what a user types, so they must keep working. The pages clean up after
// themselves; the nodes must be as the lab started them afterwards.
func TestUserGuide(t *testing.T) {
	requirePolicies(t)
	dir := filepath.Join(filepath.Dir(c.examples), "docs", "user-guide")
	pages, err := filepath.Glob(filepath.Join(dir, "1*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no user guide pages in %s (%v)", dir, err)
	}
	work := t.TempDir()
	ran, kubeletOnly := 0, 0
	for _, page := range pages {
		t.Run(filepath.Base(page), func(t *testing.T) {
			for _, b := range guideBlocks(t, page) {
				if b.kubelet && !c.kubelet {
					kubeletOnly++
					continue
				}
				begin := time.Now()
				cmd := exec.Command("bash", "-c", guideScript(b.script))
				cmd.Dir = work
				cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "PATH="+filepath.Dir(suite.KubectlPath)+":"+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s:%d: %v\n%s\noutput:\n%s", b.file, b.line, err, b.script, out)
				}
				ran++
				t.Logf("%s:%d (%v):\n%s", b.file, b.line, time.Since(begin).Round(10*time.Millisecond), out)
			}
		})
	}
	t.Logf("%d blocks ran; %d need a kubelet-mode lab (make test-kubelet runs them)", ran, kubeletOnly)
	for _, n := range []string{"node01", "node02", "node03"} {
		pristine(t, n)
	}
}
