package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/knmstate/knmstate/internal/lab"
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
		Note: "working set of the handler pod (kubelet Summary API) in a 1-node kubelet lab; baseline: upstream handler"}.withRatio(upstreamHandlerMiB))
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
		Note: "the handler pod with 10 more DHCP interfaces in its NNS; baseline: upstream handler"}.withRatio(upstreamHandlerMiB))
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
