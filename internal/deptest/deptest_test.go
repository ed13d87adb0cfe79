// Package deptest holds only a test: it checks the module's import graph
// against the layering the code relies on (tailscale's tstest/deptest). The
// rules are about what a package links, so they are checked on `go list`
// output rather than left to review.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/knmstate/knmstate"

// goPackage is the part of `go list -json` the rules read.
type goPackage struct {
	ImportPath string
	Standard   bool
	// Imports are the direct imports of the package's non-test files
	// under the build's tags.
	Imports []string
	Error   *struct{ Err string }
}

// graph maps import paths to their packages, for one set of build tags.
type graph map[string]*goPackage

// rel strips the module path: "pkg/noded" for the module's packages.
func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// under reports whether the module package path is dir or below it.
func under(path, dir string) bool {
	r := rel(path)
	return ours(path) && (r == dir || strings.HasPrefix(r, dir+"/"))
}

func isNetlink(path string) bool {
	return path == "github.com/vishvananda/netlink" || strings.HasPrefix(path, "github.com/vishvananda/netlink/")
}

func isTestbed(path string) bool { return under(path, "internal/testbed") }

// product: what ships, as opposed to the harness that develops and tests
// it (internal/testbed, the lab suites under test/, scripts under hack/).
func product(path string) bool {
	return ours(path) && !isTestbed(path) && !under(path, "test") && !under(path, "hack")
}

// testbedLinkers are product packages allowed to link the testbed in the
// default build, with the reason; their release build is checked without
// it (the notestbed rule).
var testbedLinkers = map[string]string{
	"cmd/knmstate": "its lab, bench and control-plane subcommands; the release build uses -tags notestbed",
}

// load runs `go list -deps -json` with tags over patterns, from the
// module's root.
func load(t *testing.T, tags string, patterns ...string) graph {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	args := []string{"list", "-deps", "-json"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, stderr.Bytes())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g[p.ImportPath] = &p
	}
	if len(g) == 0 {
		t.Fatal("go list listed no packages")
	}
	return g
}

// chain returns the shortest import chain from the package from to a
// package for which bad holds (nil when there is none). With direct only
// from's own imports count.
func (g graph) chain(from string, bad func(string) bool, direct bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := g[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = cur
			if bad(imp) {
				var out []string
				for at := imp; at != ""; at = prev[at] {
					out = append(out, rel(at))
				}
				slices.Reverse(out)
				return out
			}
			if q := g[imp]; !direct && q != nil && !q.Standard {
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// roots are the module's packages of g, sorted.
func (g graph) roots() []string {
	var out []string
	for path := range g {
		if ours(path) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

func TestImportRules(t *testing.T) {
	rules := []struct {
		name string
		tags string
		// patterns are listed with -deps; the rule applies to the
		// module's packages among them for which from holds.
		patterns []string
		from     func(string) bool
		bad      func(string) bool
		direct   bool
		why      string
	}{{
		name:     "netlink stays in the kernel backend",
		patterns: []string{"./..."},
		from: func(p string) bool {
			return !under(p, "pkg/backend/kernel") && !isTestbed(p)
		},
		bad:    isNetlink,
		direct: true,
		why:    "netlink types never leave pkg/backend/kernel (STYLE #6): add a function there that speaks net/netip",
	}, {
		// The NetworkManager backend reads the kernel (ethtool link
		// modes, MPTCP endpoints) through the kernel backend it holds,
		// so one package owns the namespace's sockets.
		name:     "the NetworkManager backend reads the kernel through pkg/backend/kernel",
		patterns: []string{"./pkg/backend/nm"},
		from:     func(p string) bool { return under(p, "pkg/backend/nm") },
		bad: func(p string) bool {
			return isNetlink(p) || strings.HasPrefix(p, "github.com/mdlayher/") || strings.HasPrefix(p, "github.com/vishvananda/")
		},
		direct: true,
		why:    "kernel sockets (netlink, generic netlink, namespaces) belong to pkg/backend/kernel: add a method there",
	}, {
		name:     "the product does not link the testbed",
		patterns: []string{"./..."},
		from: func(p string) bool {
			_, allowed := testbedLinkers[rel(p)]
			return product(p) && !allowed
		},
		bad: isTestbed,
		why: "internal/testbed is the development harness; product code must not depend on it",
	}, {
		name:     "pkg does not import internal",
		patterns: []string{"./pkg/..."},
		from:     func(p string) bool { return under(p, "pkg") },
		bad:      func(p string) bool { return under(p, "internal") },
		why:      "pkg/ is importable by other modules, which cannot import internal/",
	}, {
		name:     "the release build of knmstate has no testbed",
		tags:     "notestbed",
		patterns: []string{"./cmd/knmstate"},
		from:     func(p string) bool { return rel(p) == "cmd/knmstate" },
		bad:      isTestbed,
		why:      "built with -tags notestbed, knmstate must not link the lab and bench harness",
	}}
	graphs := map[string]graph{}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			key := r.tags + "\x00" + strings.Join(r.patterns, " ")
			g, ok := graphs[key]
			if !ok {
				g = load(t, r.tags, r.patterns...)
				graphs[key] = g
			}
			checked := 0
			for _, p := range g.roots() {
				if !r.from(p) {
					continue
				}
				checked++
				if c := g.chain(p, r.bad, r.direct); c != nil {
					t.Errorf("%s: %s", strings.Join(c, " → "), r.why)
				}
			}
			if checked == 0 {
				t.Errorf("no package of %v to check: the rule tests nothing", r.patterns)
			}
		})
	}
}
