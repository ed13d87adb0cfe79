// Package ui tests knmstate's web views in a real browser (Debian's
// chromium, headless, driven by chromedp) against a real lab: the API
// server, the controller and the nodes' handlers, with `knmstate ui` in
// front, as a user runs it. Nothing is mocked.
package ui

import (
	"bufio"
	"context"
	"flag"
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
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

const (
	kubectlPath  = "/usr/bin/kubectl"
	chromiumPath = "/usr/bin/chromium"
)

var knmstateBin = flag.String("ui.knmstate", "", "knmstate binary with the web views built in (default: built from cmd/knmstate; web/dist must hold the bundle)")

// suite is the one lab, `knmstate ui` and browser of the package.
type suite struct {
	dir, knmstate, kubeconfig string
	nodes                     []string
	url                       string // the printed URL, with its token
	base                      string // http://host:port
	browser                   context.Context
	closeTab                  context.CancelFunc // the open tab's
}

var s *suite

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) (code int) {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "ui: "+format+"\n", args...)
		return 1
	}
	for _, p := range []string{kubectlPath, chromiumPath} {
		if _, err := os.Stat(p); err != nil {
			return fail("%s is missing (make setup installs it): %v", p, err)
		}
	}
	root, err := testenv.FindRepoRoot()
	if err != nil {
		return fail("repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "web", "dist", "index.html")); err != nil && *knmstateBin == "" {
		return fail("the web views are not built (web/dist/index.html: %v): run make build", err)
	}
	tmp, err := os.MkdirTemp("", "knmstate-ui-test-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	st := &suite{knmstate: *knmstateBin}
	if st.knmstate == "" {
		st.knmstate = filepath.Join(tmp, "knmstate")
		if out, err := exec.Command("go", "build", "-o", st.knmstate, "github.com/knmstate/knmstate/cmd/knmstate").CombinedOutput(); err != nil {
			return fail("building knmstate: %v\n%s", err, out)
		}
	}
	name := "ui-" + strconv.Itoa(os.Getpid())
	st.dir = filepath.Join(os.TempDir(), "knmstate-"+name)
	opts := lab.Options{
		Name: name, Dir: st.dir, Nodes: 2, Binary: st.knmstate,
		APIServer:   filepath.Join(root, "bin", "kube-apiserver"),
		Kernel:      nodeKernel,
		HandlerArgs: []string{"--max-retries=1", "--probe-ping-timeout=10s"},
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.Down(ctx, name, st.dir); err != nil {
			code = fail("lab down: %v", err)
		}
		if left := lab.Leftovers(name, st.dir); len(left) > 0 {
			code = fail("lab down left behind: %v", left)
		}
	}()
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute*slowdown)
	defer cancel()
	labState, err := lab.Up(ctx, opts)
	if err != nil {
		return fail("lab up: %v", err)
	}
	st.kubeconfig = labState.Kubeconfig
	for _, n := range labState.Nodes {
		st.nodes = append(st.nodes, n.Name)
	}
	fmt.Fprintf(os.Stderr, "ui: lab %s up in %v (nodes' kernel: %q)\n", name, time.Since(begin).Round(time.Millisecond), nodeKernel)

	// knmstate ui, the real command; ended by its PID.
	ui := exec.Command(st.knmstate, "ui", "--listen", "127.0.0.1:0", "--kubeconfig", st.kubeconfig)
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

	// One headless chromium for the package, its profile in tmp.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // root, as this machine runs tests
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(tmp, "chromium")),
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
