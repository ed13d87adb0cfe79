package image

import (
	"encoding/json"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// stages splits instructions at FROM; each stage starts with its FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], in)
	}
	return out
}

// rootfsFiles are the files the build stage's RUN commands put under
// /rootfs: `install -D -m MODE SRC DEST`, `install -d -m MODE DEST` and
// `ln -s TARGET DEST`, joined by &&.
func rootfsFiles(t *testing.T, stage []instruction) []File {
	t.Helper()
	var files []File
	for _, in := range stage {
		if in.cmd != "RUN" || !strings.Contains(in.args, "/rootfs") {
			continue
		}
		for _, c := range strings.Split(in.args, "&&") {
			f := strings.Fields(c)
			switch {
			case len(f) == 6 && f[0] == "install" && f[1] == "-D" && f[2] == "-m":
				files = append(files, File{Path: strings.TrimPrefix(f[5], "/rootfs"), Mode: octalMode(t, f[3])})
			case len(f) == 5 && f[0] == "install" && f[1] == "-d" && f[2] == "-m":
				files = append(files, File{Path: strings.TrimPrefix(f[4], "/rootfs"), Mode: fs.ModeDir | octalMode(t, f[3])})
			case len(f) == 4 && f[0] == "ln" && f[1] == "-s":
				files = append(files, File{Path: strings.TrimPrefix(f[3], "/rootfs"), Mode: fs.ModeSymlink | 0o777, Link: f[2]})
			default:
				t.Errorf("Dockerfile: command %q: not one the test understands (install -D -m, install -d -m, ln -s)", strings.TrimSpace(c))
			}
		}
	}
	return files
}

func octalMode(t *testing.T, s string) fs.FileMode {
	t.Helper()
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		t.Fatalf("Dockerfile: mode %q: %v", s, err)
	}
	mode := fs.FileMode(m & 0o777)
	for bit, fm := range map[uint64]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if m&bit != 0 {
			mode |= fm
		}
	}
	return mode
}

// TestDockerfileMatchesImage: the Dockerfile, which cannot be built here,
// assembles the files of the Go-built knmstate image (paths, modes, the
// link) and copies them whole into a scratch image with the same
// entrypoint, environment and labels.
func TestDockerfileMatchesImage(t *testing.T) {
	st := stages(readDockerfile(t))
	if len(st) != 2 {
		t.Fatalf("Dockerfile has %d stages, want 2 (build, final)", len(st))
	}
	build, final := st[0], st[1]

	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "golang:" + string(goVersion[1]) + " AS build"; build[0].args != want {
		t.Errorf("build stage FROM %q, want %q (go.mod's Go)", build[0].args, want)
	}

	want := KnmstateFiles(Inputs{})
	for i := range want {
		want[i].Source = ""
	}
	if diff := cmp.Diff(want, rootfsFiles(t, build)); diff != "" {
		t.Errorf("Dockerfile's /rootfs vs KnmstateFiles (-image +Dockerfile):\n%s", diff)
	}
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "/rootfs/etc/ssl/certs/") && !strings.Contains(in.args, " "+CABundle+" ") {
			t.Errorf("Dockerfile: the CA bundle does not come from %s", CABundle)
		}
	}

	spec := Knmstate(Inputs{})
	var copies, entrypoint, env []string
	labels := map[string]string{}
	for _, in := range final[1:] {
		switch in.cmd {
		case "COPY":
			copies = append(copies, in.args)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Errorf("ENTRYPOINT %s: %v", in.args, err)
			}
		case "ENV":
			env = append(env, in.args)
		case "LABEL":
			for _, m := range regexp.MustCompile(`(\S+)="([^"]*)"`).FindAllStringSubmatch(in.args, -1) {
				labels[m[1]] = m[2]
			}
		}
	}
	if final[0].args != "scratch" {
		t.Errorf("final stage FROM %q, want scratch", final[0].args)
	}
	if diff := cmp.Diff([]string{"--from=build /rootfs/ /"}, copies); diff != "" {
		t.Errorf("final stage COPY (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(spec.Entrypoint, entrypoint); diff != "" {
		t.Errorf("ENTRYPOINT (-image +Dockerfile):\n%s", diff)
	}
	if diff := cmp.Diff(spec.Env, env); diff != "" {
		t.Errorf("ENV (-image +Dockerfile):\n%s", diff)
	}
	for _, k := range []string{"org.opencontainers.image.title", "org.opencontainers.image.description", "org.opencontainers.image.source"} {
		if labels[k] != spec.Labels[k] {
			t.Errorf("LABEL %s=%q, want %q", k, labels[k], spec.Labels[k])
		}
	}
	if labels["org.opencontainers.image.version"] != "${VERSION}" {
		t.Errorf("LABEL org.opencontainers.image.version=%q, want ${VERSION}", labels["org.opencontainers.image.version"])
	}
}
