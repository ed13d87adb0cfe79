package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// TestSuitesUseTheKit fails when a file under test/ defines what the kit
// owns: a poller, a kubectl wrapper, node exec, or a TestMain that brings a
// lab (or a control plane) up itself.
func TestSuitesUseTheKit(t *testing.T) {
	root, err := testenv.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(filepath.Join(root, "test"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, v := range violations(fset, f) {
			rel, _ := filepath.Rel(root, v.file)
			t.Errorf("%s:%d: %s (use internal/testbed/suite)", rel, v.line, v.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go files under test/")
	}
}

// TestViolations shows the checker finds each kind it looks for.
func TestViolations(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{{
		name: "the kit's",
		src: `package x
import ("os"; "testing"; "github.com/knmstate/knmstate/internal/testbed/suite")
func TestMain(m *testing.M) { os.Exit(suite.Main(m, suite.Options{}, nil)) }
func TestA(t *testing.T) {
	suite.Eventually(t, 0, "a", func() error { return nil })
	waitForIt := 3
	_ = waitForIt
}
func policyReady() {}
`,
	}, {
		name: "pollers",
		src: `package x
func eventually() {}
func WaitForPolicy() {}
func (c *cluster) pollNodes() {}
func f() { waitFor := func() {}; waitFor() }
`,
		want: []string{"poller eventually", "poller WaitForPolicy", "poller pollNodes", "poller waitFor"},
	}, {
		name: "kubectl wrappers",
		src: `package x
import ("os/exec"; xexec "os/exec")
const kubectlPath = "/usr/bin/kubectl"
func kubectl(args ...string) {}
func run() { exec.Command(kubectlPath, "get", "nodes").Run() }
func run2() { xexec.CommandContext(nil, "kubectl", "get").Run() }
func run3() { exec.Command("ip", "link").Run() }
func nodeExec(bin, node string) { exec.Command(bin, append([]string{"lab", "exec", node, "--"}, "ip")...).Run() }
`,
		want: []string{"kubectl wrapper kubectl", "kubectl wrapper run", "kubectl wrapper run2", "node exec nodeExec"},
	}, {
		name: "labs of their own",
		src: `package x
import ("os"; "testing"; l "github.com/knmstate/knmstate/internal/testbed/lab"; "github.com/knmstate/knmstate/internal/testbed/testenv")
func TestMain(m *testing.M) { l.Up(nil, l.Options{}); os.Exit(m.Run()) }
func down() { l.Down(nil, "", "") }
func exec() { l.Exec(nil, "", "", nil, nil, nil, nil) }
var env *testenv.Env
func main2(m *testing.M) int { return testenv.RunMain(m, &env) }
func status() { l.ReadState("") }
`,
		want: []string{"TestMain without suite.Main", "lab.Up outside the kit", "lab.Down outside the kit",
			"lab.Exec outside the kit", "testenv.RunMain outside the kit"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range violations(fset, f) {
				got = append(got, v.what)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

type violation struct {
	file string
	line int
	what string
}

// pollerPrefixes are the names of pollers, lowercase.
var pollerPrefixes = []string{"eventually", "waitfor", "poll", "until", "retry"}

// kitCalls are the lab's and testenv's functions only the kit calls: a
// suite brings its labs up, down and into a node with the kit's.
var kitCalls = map[string][]string{
	"github.com/knmstate/knmstate/internal/testbed/lab":     {"Up", "Down", "Leftovers", "Exec"},
	"github.com/knmstate/knmstate/internal/testbed/testenv": {"RunMain", "Start"},
}

const kitPath = "github.com/knmstate/knmstate/internal/testbed/suite"

func violations(fset *token.FileSet, f *ast.File) []violation {
	imports := map[string]string{} // local name -> path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	var out []violation
	add := func(n ast.Node, what string) {
		pos := fset.Position(n.Pos())
		out = append(out, violation{file: pos.Filename, line: pos.Line, what: what})
	}
	// pkgCall returns the import path and name of a call of a package's
	// function (path "" for anything else).
	pkgCall := func(call *ast.CallExpr) (path, fn string) {
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return "", ""
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return "", ""
		}
		return imports[x.Name], sel.Sel.Name
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if isPoller(fn.Name.Name) {
			add(fn, "poller "+fn.Name.Name)
		}
		if fn.Body == nil {
			continue
		}
		if strings.HasPrefix(strings.ToLower(fn.Name.Name), "kubectl") || runsKubectl(fn.Body, imports) {
			add(fn, "kubectl wrapper "+fn.Name.Name)
		}
		if runsLabExec(fn.Body, imports) {
			add(fn, "node exec "+fn.Name.Name)
		}
		if fn.Name.Name == "TestMain" && fn.Recv == nil && !callsKitMain(fn.Body, pkgCall) {
			add(fn, "TestMain without suite.Main")
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					id, ok := lhs.(*ast.Ident)
					if !ok || i >= len(n.Rhs) {
						continue
					}
					if _, ok := n.Rhs[i].(*ast.FuncLit); ok && isPoller(id.Name) {
						add(n, "poller "+id.Name)
					}
				}
			case *ast.CallExpr:
				path, name := pkgCall(n)
				for _, kit := range kitCalls[path] {
					if name == kit {
						add(n, path[strings.LastIndex(path, "/")+1:]+"."+name+" outside the kit")
					}
				}
			}
			return true
		})
	}
	return out
}

func isPoller(name string) bool {
	name = strings.ToLower(name)
	for _, p := range pollerPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// execCalls calls f with the command name and arguments of each command
// body starts with os/exec.
func execCalls(body *ast.BlockStmt, imports map[string]string, f func(name ast.Expr, args []ast.Expr)) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || imports[x.Name] != "os/exec" {
			return true
		}
		switch {
		case sel.Sel.Name == "Command" && len(call.Args) > 0:
			f(call.Args[0], call.Args[1:])
		case sel.Sel.Name == "CommandContext" && len(call.Args) > 1:
			f(call.Args[1], call.Args[2:])
		}
		return true
	})
}

// runsLabExec: body runs `... lab exec` (knmstate's node exec).
func runsLabExec(body *ast.BlockStmt, imports map[string]string) bool {
	found := false
	execCalls(body, imports, func(_ ast.Expr, args []ast.Expr) {
		var words []string
		for _, a := range args {
			ast.Inspect(a, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					w, _ := strconv.Unquote(lit.Value)
					words = append(words, w)
				}
				return true
			})
		}
		for i := 1; i < len(words); i++ {
			found = found || words[i-1] == "lab" && words[i] == "exec"
		}
	})
	return found
}

// runsKubectl: body starts a command (os/exec) whose name mentions kubectl.
func runsKubectl(body *ast.BlockStmt, imports map[string]string) bool {
	found := false
	execCalls(body, imports, func(name ast.Expr, _ []ast.Expr) {
		ast.Inspect(name, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				found = found || strings.Contains(strings.ToLower(n.Value), "kubectl")
			case *ast.Ident:
				found = found || strings.Contains(strings.ToLower(n.Name), "kubectl")
			}
			return true
		})
	})
	return found
}

func callsKitMain(body *ast.BlockStmt, pkgCall func(*ast.CallExpr) (string, string)) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if path, name := pkgCall(call); path == kitPath && name == "Main" {
				found = true
			}
		}
		return true
	})
	return found
}
