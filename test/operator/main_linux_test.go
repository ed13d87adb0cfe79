//go:build kubelet

package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// kubectlPath is this machine's kubectl (make setup installs it).
const kubectlPath = "/usr/bin/kubectl"

var (
	knmstateBin = flag.String("operator.knmstate", "", "knmstate binary the images hold (make build)")
	imagesDir   = flag.String("operator.images", "", "images of make images (version N)")
)

// handlerArgs are passed to the handlers through the operator (a patch of
// its Deployment, as a user would add one): a quick safety net and the
// lab's own DNS name for the DNS probe.
var handlerArgs = []string{"--max-retries=1", "--probe-ping-timeout=10s"}

// suite is the lab and what the tests share.
type suite struct {
	name, dir, root string
	knmstate        string
	kubeconfig      string
	state           *lab.State
	// images: N (make images) and N+1 (the same tree, another version).
	imagesN, imagesNext   string
	versionN, versionNext string
}

var s *suite

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "operator: "+format+"\n", args...)
		return 1
	}
	root, err := testenv.FindRepoRoot()
	if err != nil {
		return fail("%v", err)
	}
	st := &suite{root: root, knmstate: *knmstateBin, imagesN: *imagesDir}
	if st.knmstate == "" {
		st.knmstate = filepath.Join(root, "bin", "knmstate")
	}
	if st.imagesN == "" {
		st.imagesN = filepath.Join(root, "bin", "images")
	}
	var rec struct{ Tag string }
	b, err := os.ReadFile(filepath.Join(st.imagesN, "knmstate.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return fail("images of make images in %s: %v (make build images)", st.imagesN, err)
	}
	st.versionN = rec.Tag
	tmp, err := os.MkdirTemp("", "knmstate-operator-test-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	// Version N+1: the same tree linked with another version string, its
	// images made by the same program as make images.
	st.versionNext = st.versionN + "-next"
	if st.imagesNext, err = buildImages(root, tmp, st.versionNext); err != nil {
		return fail("images of version %s: %v", st.versionNext, err)
	}
	st.name = "op-" + strconv.Itoa(os.Getpid())
	st.dir = filepath.Join(os.TempDir(), "knmstate-operator-"+st.name)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.Down(ctx, st.name, st.dir); err != nil {
			code = fail("lab down: %v", err)
		}
		if left := lab.Leftovers(st.name, st.dir); len(left) > 0 {
			code = fail("lab down left behind: %v", left)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	state, err := lab.Up(ctx, lab.Options{
		Name: st.name, Dir: st.dir, Nodes: 3, Binary: st.knmstate, Kubelet: true, Install: lab.InstallNone,
		Images: st.imagesN, MoreImages: []string{st.imagesNext},
		APIServer: filepath.Join(root, "bin", "kube-apiserver"),
	})
	if err != nil {
		return fail("lab up: %v", err)
	}
	fmt.Fprintf(os.Stderr, "operator: lab %s up in %v, nothing of knmstate installed\n", st.name, time.Since(begin).Round(time.Millisecond))
	st.state, st.kubeconfig = state, state.Kubeconfig
	s = st
	return m.Run()
}

// buildImages links knmstate with version and makes its images with
// hack/images (what make images runs) into a directory under tmp.
func buildImages(root, tmp, version string) (string, error) {
	bin := filepath.Join(tmp, version, "bin")
	out := filepath.Join(tmp, version, "images")
	steps := [][]string{
		{"go", "build", "-trimpath", "-ldflags", "-X github.com/knmstate/knmstate/internal/version.Version=" + version, "-o", filepath.Join(bin, "knmstate"), "./cmd/knmstate"},
		{"go", "build", "-trimpath", "-o", filepath.Join(bin, "pause"), "./hack/pause"},
		{"go", "run", "./hack/images", "--knmstate", filepath.Join(bin, "knmstate"), "--pause", filepath.Join(bin, "pause"),
			"--out", out, "--version", version, "--created", "0"},
	}
	for _, args := range steps {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	return out, nil
}

// kubectl runs kubectl against the lab; a failure fails the test.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kubectlErr(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlErr runs kubectl with stdin and returns its output and error.
func kubectlErr(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlPath, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// eventually retries check until it reports nothing ("") or timeout.
func eventually(t testing.TB, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %s", what, timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kustomization writes a kustomization that installs deploy/operator with
// the lab registry's image of the given key ("knmstate" or
// "knmstate:TAG") and the suite's handler arguments, as a user would set
// them, and returns its directory.
func kustomization(t *testing.T, imageKey string) string {
	t.Helper()
	ref, ok := s.state.Images[imageKey]
	if !ok {
		t.Fatalf("the lab serves no image %s (%v)", imageKey, s.state.Images)
	}
	name, digest, _ := strings.Cut(ref, "@")
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(s.root, "deploy", "operator"))
	if err != nil {
		t.Fatal(err)
	}
	var patches strings.Builder
	for _, a := range append(append([]string(nil), handlerArgs...), "--probe-dns-host=api.lab.example") {
		fmt.Fprintf(&patches, "    - op: add\n      path: /spec/template/spec/containers/0/args/-\n      value: --handler-arg=%s\n", a)
	}
	k := fmt.Sprintf(`resources:
- %s
images:
- name: knmstate
  newName: %s
  digest: %s
patches:
- target: {kind: Deployment, name: knmstate-operator}
  patch: |-
%s`, rel, name, digest, patches.String())
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
