//go:build kubelet

package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// handlerArgs are passed to the handlers through the operator (a patch of
// its Deployment, as a user would add one): a quick safety net and the
// lab's own DNS name for the DNS probe.
var handlerArgs = []string{"--max-retries=1", "--probe-ping-timeout=10s"}

// suite is the lab and what the tests share.
type fixture struct {
	root     string
	knmstate string
	lab      *suite.Lab
	kubectl  suite.Kubectl
	state    *lab.State
	// images: N (make images) and N+1 (the same tree, another version).
	imagesN, imagesNext   string
	versionN, versionNext string
}

var s *fixture

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "operator", Require: []string{suite.KubectlPath}}, func(k *suite.Kit) int {
		st, err := up(k)
		if err != nil {
			k.Logf("%v", err)
			return 1
		}
		s = st
		return m.Run()
	}))
}

// up makes the images of version N+1 and brings the lab up with nothing
// of knmstate installed (the kit takes it down).
func up(k *suite.Kit) (*fixture, error) {
	st := &fixture{root: k.Root, knmstate: k.Knmstate, imagesN: k.Images}
	var rec struct{ Tag string }
	b, err := os.ReadFile(filepath.Join(st.imagesN, "knmstate.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return nil, fmt.Errorf("images of make images in %s: %w (make build images)", st.imagesN, err)
	}
	st.versionN = rec.Tag
	// Version N+1: the same tree linked with another version string, its
	// images made by the same program as make images.
	st.versionNext = st.versionN + "-next"
	if st.imagesNext, err = buildImages(k.Root, k.TempDir, st.versionNext); err != nil {
		return nil, fmt.Errorf("images of version %s: %w", st.versionNext, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := k.Up(ctx, lab.Options{
		Name: "op-" + strconv.Itoa(os.Getpid()), Nodes: 3, Kubelet: true, Install: lab.InstallNone,
		MoreImages: []string{st.imagesNext},
	})
	if err != nil {
		return nil, err
	}
	k.Logf("nothing of knmstate installed on lab %s", l.Name)
	st.lab, st.state, st.kubectl = l, l.State, l.Kubectl
	return st, nil
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
