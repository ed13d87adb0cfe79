package api

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesUpToDate regenerates the deepcopy code and the CRD
// manifests into a temp dir with the pinned controller-gen and compares them
// with the committed files, so a type change without `make generate` fails.
func TestGeneratedFilesUpToDate(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(root, "bin", "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		t.Fatalf("controller-gen missing (%v): run `make setup`", err)
	}
	tmp := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gen, args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %v: %v\n%s", args, err, out)
		}
	}

	// want maps a committed file to its freshly generated twin.
	want := map[string]string{}
	for _, pkg := range []string{"shared", "v1", "v1beta1"} {
		out := filepath.Join(tmp, "object", pkg)
		run("object:headerFile=hack/boilerplate.go.txt", "paths=./api/"+pkg, "output:object:dir="+out)
		want[filepath.Join(root, "api", pkg, "zz_generated.deepcopy.go")] = filepath.Join(out, "zz_generated.deepcopy.go")
	}
	crds := filepath.Join(tmp, "crds")
	run("crd:crdVersions=v1", "paths=./api/...", "output:crd:artifacts:config="+crds)
	fresh, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh) == 0 {
		t.Fatal("controller-gen generated no CRDs")
	}
	for _, f := range fresh {
		want[filepath.Join(root, "deploy", "crds", filepath.Base(f))] = f
	}
	committed, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range committed {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // lists the CRDs for kubectl apply -k; checked in deploy
		}
		if _, ok := want[f]; !ok {
			t.Errorf("%s is not generated from api/ any more: delete it (make generate)", f)
		}
	}

	for committedFile, freshFile := range want {
		got, err := os.ReadFile(committedFile)
		if err != nil {
			t.Errorf("%v: run `make generate`", err)
			continue
		}
		wantData, err := os.ReadFile(freshFile)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantData) {
			t.Errorf("%s is stale: run `make generate`", committedFile)
		}
	}
}
