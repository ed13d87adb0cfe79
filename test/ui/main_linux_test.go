// Package ui tests knmstate's web views in a real browser (Debian's
// chromium, headless, driven by chromedp) against a real lab: the API
// server, the controller and the nodes' handlers, with `knmstate ui` in
// front, as a user runs it. Nothing is mocked.
package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

const chromiumPath = "/usr/bin/chromium"

// suite is the one lab, `knmstate ui` and browser of the package.
type fixture struct {
	lab      *suite.Lab
	kubectl  suite.Kubectl
	nodes    []string
	url      string // the printed URL, with its token
	base     string // http://host:port
	browser  context.Context
	closeTab context.CancelFunc // the open tab's
}

var s *fixture

func TestMain(m *testing.M) {
	opts := suite.Options{Name: "ui", BuildKnmstate: true, Require: []string{suite.KubectlPath, chromiumPath}}
	os.Exit(suite.Main(m, opts, func(k *suite.Kit) int { return runSuite(m, k) }))
}

func runSuite(m *testing.M, k *suite.Kit) (code int) {
	fail := func(format string, args ...any) int {
		k.Logf(format, args...)
		return 1
	}
	// The knmstate the kit builds embeds web/dist as it is: the views
	// must be built (make build, which -suite.knmstate comes from).
	built := strings.HasPrefix(k.Knmstate, k.TempDir)
	if _, err := os.Stat(filepath.Join(k.Root, "web", "dist", "index.html")); err != nil && built {
		return fail("the web views are not built (web/dist/index.html: %v): run make build", err)
	}
	st := &fixture{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute*slowdown)
	defer cancel()
	l, err := k.Up(ctx, lab.Options{
		Name: "ui-" + strconv.Itoa(os.Getpid()), Nodes: 2,
		Kernel:      nodeKernel,
		HandlerArgs: []string{"--max-retries=1", "--probe-ping-timeout=10s"},
	})
	if err != nil {
		return fail("%v", err)
	}
	st.lab, st.kubectl, st.nodes = l, l.Kubectl, l.Nodes()

	// knmstate ui, the real command; ended by its PID.
	ui := exec.Command(k.Knmstate, "ui", "--listen", "127.0.0.1:0", "--kubeconfig", st.kubectl.Kubeconfig)
	stdout, err := ui.StdoutPipe()
	if err != nil {
		return fail("%v", err)
	}
	ui.Stderr = os.Stderr
	if err := ui.Start(); err != nil {
		return fail("starting knmstate ui: %v", err)
	}
	defer func() {
		ui.Process.Kill()
		ui.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fail("reading knmstate ui's URL: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	i := strings.Index(line, "http://")
	if i < 0 {
		return fail("knmstate ui printed %q, want its URL", line)
	}
	st.url = strings.TrimSpace(line[i:])
	st.base = st.url[:strings.Index(st.url, "/?")]
	fmt.Fprintf(os.Stderr, "ui: %s", line)

	// One headless chromium for the package, its profile in the kit's temporary directory.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // root, as this machine runs tests
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(k.TempDir, "chromium")),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		return fail("starting chromium: %v", err)
	}
	st.browser = browser
	s = st
	return m.Run()
}
