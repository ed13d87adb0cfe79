package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
)

// handlerWorkingSet is handler.workingset: the handler pod's working set as
// the kubelet reports it (its Summary API: the pod cgroup's memory usage
// minus inactive file pages, what evictions and `kubectl top` use) in a
// 1-node kubelet-mode lab, idle and with 10 more DHCP interfaces.
func handlerWorkingSet(ctx context.Context, env Env) (rows []Result, err error) {
	images := filepath.Join(env.RepoRoot, "bin", "images")
	if _, err := os.Stat(filepath.Join(images, "knmstate.json")); err != nil {
		return nil, notMeasurable("no images in %s (make images)", images)
	}
	l, err := startLabWith(ctx, env, "ws", lab.Options{Nodes: 1, Kubelet: true, Images: images})
	defer func() { err = errors.Join(err, l.close()) }()
	if err != nil {
		return nil, err
	}
	node := l.st.Nodes[0]
	if err := sleep(ctx, nnsSettle); err != nil {
		return nil, err
	}
	idle, err := l.podWorkingSet(ctx, node.Name, "knmstate-handler-", time.Now())
	if err != nil {
		return nil, err
	}
	rows = append(rows, Result{Name: "handler.workingset.idle", Value: num(idle / mib), Unit: "MiB", Target: "< 25",
		Note: "working set of the handler pod (kubelet Summary API) in a 1-node kubelet lab; " + l.podMemoryNote(node.Name) + "; baseline: upstream handler"}.withRatio(upstreamHandlerMiB))
	if err := addDHCPInterfaces(ctx, env, l); err != nil {
		return rows, err
	}
	last := fmt.Sprintf("dhcp%d", dhcpInterfaces-1)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = waitFor(wctx, 100*time.Millisecond, "the leases in the NNS", func() (bool, error) {
		s, err := l.nnsText(wctx, node.Name)
		return err == nil && strings.Contains(s, `"`+last+`"`) && leasesDone(node.NetNS) == nil, nil
	})
	cancel()
	if err != nil {
		return rows, err
	}
	if err := sleep(ctx, nnsSettle); err != nil {
		return rows, err
	}
	busy, err := l.podWorkingSet(ctx, node.Name, "knmstate-handler-", time.Now())
	if err != nil {
		return rows, err
	}
	rows = append(rows, Result{Name: "handler.workingset.dhcp10", Value: num(busy / mib), Unit: "MiB", Target: "< 25",
		Note: "the handler pod with 10 more DHCP interfaces in its NNS; " + l.podMemoryNote(node.Name) + "; baseline: upstream handler"}.withRatio(upstreamHandlerMiB))
	return rows, nil
}

// podWorkingSet reads the working set of the first pod whose name starts
// with prefix from the node's kubelet (Summary API, through the API
// server), waiting for a sample taken after since (the kubelet samples
// every few seconds and serves its last sample).
func (l *benchLab) podWorkingSet(ctx context.Context, node, prefix string, since time.Time) (float64, error) {
	var ws float64
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := waitFor(wctx, time.Second, "the kubelet's memory figure of "+prefix+"*", func() (bool, error) {
		raw, err := l.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/stats/summary").DoRaw(wctx)
		if err != nil {
			return false, nil // the kubelet's stats provider starts late
		}
		var sum struct {
			Pods []struct {
				PodRef struct{ Name string } `json:"podRef"`
				Memory *struct {
					Time            time.Time `json:"time"`
					WorkingSetBytes *float64  `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			return false, fmt.Errorf("kubelet summary: %w", err)
		}
		for _, p := range sum.Pods {
			if strings.HasPrefix(p.PodRef.Name, prefix) && p.Memory != nil && p.Memory.WorkingSetBytes != nil && p.Memory.Time.After(since) {
				ws = *p.Memory.WorkingSetBytes
				return true, nil
			}
		}
		return false, nil
	})
	return ws, err
}

// podMemory is what a pod's memory cgroup holds (v1 memory.stat's total_*
// fields, or v2's), in bytes.
type podMemory struct {
	Anon, ActiveFile, InactiveFile float64
}

// note says what the working set is made of: anonymous memory (the
// processes' own) and file pages (mostly binaries' code and data mapped
// by the handler and its exec probes); the inactive ones do not count.
func (m podMemory) note() string {
	return fmt.Sprintf("the pod cgroup holds %.1f MiB anonymous, %.1f MiB active file pages (counted), %.1f MiB inactive file pages (not counted)",
		m.Anon/mib, m.ActiveFile/mib, m.InactiveFile/mib)
}

// handlerPodMemory finds the handler process of the lab's node (its
// memory cgroup lies below the lab's cgroup, knmstate-lab/LAB/NODE) and
// reads the memory.stat of its pod's cgroup (the container's parent).
func handlerPodMemory(lab, node string) (podMemory, error) {
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return podMemory{}, err
	}
	marker := "/knmstate-lab/" + lab + "/" + node + "/"
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "knmstate") || args[1] != "handler" {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(p, "cgroup"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(cg), "\n") {
			// v1 "N:memory:/path", v2 "0::/path"
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || (f[1] != "memory" && f[1] != "") || !strings.Contains(f[2], marker) {
				continue
			}
			dir := filepath.Dir(f[2])
			for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
				if m, err := readMemoryStat(filepath.Join(root, dir, "memory.stat")); err == nil {
					return m, nil
				}
			}
		}
	}
	return podMemory{}, fmt.Errorf("no handler process of node %s in lab %s with a readable pod memory cgroup", node, lab)
}

// readMemoryStat reads a memory.stat file, v1 (total_rss,
// total_active_file, total_inactive_file) or v2 (anon, active_file,
// inactive_file).
func readMemoryStat(path string) (podMemory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return podMemory{}, err
	}
	vals := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return podMemory{}, fmt.Errorf("%s: %s: %w", path, k, err)
		}
		vals[k] = n
	}
	if _, v1 := vals["total_rss"]; v1 {
		// v1: the totals include the containers below the pod's cgroup.
		return podMemory{Anon: vals["total_rss"], ActiveFile: vals["total_active_file"], InactiveFile: vals["total_inactive_file"]}, nil
	}
	m := podMemory{Anon: vals["anon"], ActiveFile: vals["active_file"], InactiveFile: vals["inactive_file"]}
	return m, nil
}

// podMemoryNote is handlerPodMemory's note, or why there is none.
func (l *benchLab) podMemoryNote(node string) string {
	m, err := handlerPodMemory(l.name, node)
	if err != nil {
		return "memory.stat not read: " + err.Error()
	}
	return m.note()
}
