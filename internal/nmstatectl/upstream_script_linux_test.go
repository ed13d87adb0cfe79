package nmstatectl

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUpstreamScript runs testdata/upstream/script.txt: nmstatectl command
// lines taken from upstream nmstate's tests and documentation, unchanged
// but for the files they name, against a throw-away node.
func TestUpstreamScript(t *testing.T) {
	n := newCLINode(t)
	dir, err := filepath.Abs("testdata/upstream")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	f, err := os.Open(filepath.Join(dir, "script.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pending := regexp.MustCompile(`checkpoint (\S+) is pending`)
	var lastErr string
	ran := 0
	sc := bufio.NewScanner(f)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.NewReplacer("$D", dir, "$ROOT", root).Replace(line)
		fields := strings.Fields(line)
		where := "script.txt:" + strconv.Itoa(lineNo) + ": " + line
		switch fields[0] {
		case "present", "absent":
			has := strings.Contains(n.mustRun(t, "", "show", fields[1]), "name: "+fields[1]+"\n")
			if has != (fields[0] == "present") {
				t.Fatalf("%s: does not hold", where)
			}
		case "mtu":
			if !strings.Contains(n.mustRun(t, "", "show", fields[1]), "mtu: "+fields[2]+"\n") {
				t.Fatalf("%s: does not hold", where)
			}
		case "sleep":
			s, _ := strconv.Atoi(fields[1])
			time.Sleep(time.Duration(s) * time.Second)
		case "commit-pending":
			m := pending.FindStringSubmatch(lastErr)
			if m == nil {
				t.Fatalf("%s: the last apply reported no pending checkpoint:\n%s", where, lastErr)
			}
			if out := n.mustRun(t, "", "commit", m[1]); strings.TrimSpace(out) != m[1] {
				t.Fatalf("%s: commit %s printed %q", where, m[1], out)
			}
		case "nmstatectl", "!":
			fail := fields[0] == "!"
			if fail {
				fields = fields[1:]
			}
			args, stdin := fields[1:], ""
			if i := len(args) - 2; i >= 0 && args[i] == "<" {
				data, err := os.ReadFile(args[i+1])
				if err != nil {
					t.Fatal(err)
				}
				args, stdin = args[:i], string(data)
			}
			for i, a := range args { // the shell's unquoting of eth\*
				args[i] = strings.ReplaceAll(a, `\*`, "*")
			}
			_, errOut, code := n.run(t, stdin, args...)
			lastErr = errOut
			if fail != (code != 0) {
				t.Fatalf("%s: exit %d\nstderr:\n%s", where, code, errOut)
			}
			ran++
		default:
			t.Fatalf("%s: unknown line form", where)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nmstatectl invocations ran as upstream's scripts run them", ran)
}
