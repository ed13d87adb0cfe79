package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// controlFile is the supervisor's control socket in the lab directory
// (lab reboot talks to it).
const controlFile = "control.sock"

// RebootResult is what a node's reboot took.
type RebootResult struct {
	Node string `json:"node"`
	// Start is when the node went down.
	Start time.Time `json:"start"`
	// Down is how long stopping its processes and removing its namespaces
	// took; Up until its namespaces, NICs and DHCP lease were back (and its
	// first boot's file applied, with FirstBootDir); Handler is when its
	// handler started again (kubelet mode: when its init started again,
	// with the kubelet that restarts the handler's pod).
	Down    Duration  `json:"down"`
	Up      Duration  `json:"up"`
	Handler time.Time `json:"handler"`
}

// reboot does to one node what a reboot does to a machine whose network
// configuration is not persisted: its handler, node runtime and Open
// vSwitch stop; its namespaces and NICs are removed and made anew (new
// links, MACs as the lab assigns them, no addresses, no routes), its OVS
// database and DHCP leases are gone; then the node runtime configures eth0
// by DHCP from scratch and the handler starts again, which puts back the
// policies the node no longer shows. The handler's state directory
// (checkpoints) is kept, as /var/lib is on a real node.
//
// A NetworkManager node keeps what a disk keeps: its persistent profiles
// and NetworkManager's /var/lib (leases); its in-memory profiles go with
// /run. Its NetworkManager starts again before the handler, and the
// reboot waits for the node's address on whichever link those profiles
// put it (a bond, br-ex), so what comes back before the handler runs is
// NetworkManager's own doing. Guest mode reboots the node in the guest
// (its NICs are the guest's, given back and taken again).
func (s *supervisor) reboot(ctx context.Context, name string) (*RebootResult, error) {
	if s.opts.Kernel != "" && s.where != "guest" {
		return s.rebootInGuest(ctx, name)
	}
	if s.sw == nil {
		return nil, errors.New("lab reboot: the lab's nodes are not built yet")
	}
	s.rebootMu.Lock()
	defer s.rebootMu.Unlock()
	s.mu.Lock()
	idx := slices.IndexFunc(s.state.Nodes, func(n NodeState) bool { return n.Name == name })
	if idx < 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("lab reboot: no node %s", name)
	}
	n := s.state.Nodes[idx]
	s.mu.Unlock()

	res := &RebootResult{Node: name, Start: time.Now()}
	s.log.Info("rebooting node", "node", name)
	if s.opts.Kubelet {
		return res, s.rebootKubelet(ctx, idx, n, res)
	}
	handler := s.stop("handler/" + name)
	s.stop("noded/" + name)
	nm := s.stopNetworkManager(name)
	if nm {
		if err := emptyDir(filepath.Join(s.opts.Dir, "nodes", name, "nm", "run")); err != nil {
			return nil, fmt.Errorf("node %s: a fresh /run: %w", name, err)
		}
	}
	if n.OVSDB != "" {
		s.stopOVS(name)
		if err := os.RemoveAll(s.ovsDir(name)); err != nil {
			return nil, fmt.Errorf("node %s: wiping its OVS database: %w", name, err)
		}
	}
	dhcp := s.opts.Nmstatectl != "" && s.opts.Nmstatectl != NoNodeRuntime
	if dhcp {
		if err := os.RemoveAll(s.nodedStateDir(name)); err != nil {
			return nil, fmt.Errorf("node %s: wiping its leases: %w", name, err)
		}
	}
	if err := s.sw.RemoveNode(name); err != nil {
		return nil, fmt.Errorf("lab reboot: %w", err)
	}
	res.Down = Duration(time.Since(res.Start))

	if err := s.addNode(s.sw, &n, lanPrefix, dhcp); err != nil {
		return nil, fmt.Errorf("lab reboot: %w", err)
	}
	if n.OVSDB != "" {
		if err := s.startOVS(ctx, &n, nil); err != nil {
			return nil, fmt.Errorf("lab reboot: %w", err)
		}
	}
	switch {
	case nm:
		if err := s.startNetworkManager(ctx, &n, nil); err != nil {
			return nil, fmt.Errorf("lab reboot: %w", err)
		}
		if err := waitAddress(ctx, s.sw, []NodeState{n}, s.scale(time.Minute)); err != nil {
			return nil, fmt.Errorf("lab reboot: %w (from the node's persistent profiles: nodes/%s/nm/NetworkManager.log)", err, name)
		}
	case dhcp:
		if err := waitLeases(ctx, s.sw, []NodeState{n}, s.scale(time.Minute)); err != nil {
			return nil, fmt.Errorf("lab reboot: %w", err)
		}
	}
	if s.opts.FirstBootDir != "" {
		s.firstBoot(ctx, &n)
	}
	res.Up = Duration(time.Since(res.Start))
	s.mu.Lock()
	s.state.Nodes[idx] = n
	s.mu.Unlock()
	if handler {
		p, err := s.handlerProc(&n, s.where, s.hostSpawner)
		if err != nil {
			return nil, fmt.Errorf("lab reboot: %w", err)
		}
		s.start(p)
		res.Handler = time.Now()
	}
	s.publish()
	s.log.Info("node rebooted", "node", name, "down", time.Duration(res.Down), "up", time.Duration(res.Up))
	return res, nil
}

// rebootInGuest has the guest's agent reboot the node (guest mode).
func (s *supervisor) rebootInGuest(ctx context.Context, name string) (*RebootResult, error) {
	s.mu.Lock()
	c := s.guest
	s.mu.Unlock()
	if c == nil {
		return nil, errors.New("lab reboot: the guest is not up yet")
	}
	s.rebootMu.Lock()
	defer s.rebootMu.Unlock()
	res := &RebootResult{}
	if err := c.do(ctx, http.MethodPost, "/reboot/"+name, nil, res); err != nil {
		return nil, fmt.Errorf("lab reboot: %w", err)
	}
	s.refreshGuest(ctx, c)
	return res, nil
}

// serveControl answers lab commands on the control socket until ctx ends.
func (s *supervisor) serveControl(ctx context.Context) (stop func(), err error) {
	path := filepath.Join(s.opts.Dir, controlFile)
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault", s.serveFault)
	mux.HandleFunc("POST /reboot/{node}", func(w http.ResponseWriter, r *http.Request) {
		// The lab's context, not the request's: a client that goes away
		// must not leave the node half rebooted.
		res, err := s.reboot(s.procCtx, r.PathValue("node"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	return func() {
		_ = srv.Close()
		<-done
		_ = os.Remove(path)
	}, nil
}

// Reboot asks the lab in dir to reboot node and returns once the node is
// back with its handler started.
func Reboot(ctx context.Context, dir, node string) (*RebootResult, error) {
	path := filepath.Join(dir, controlFile)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lab/reboot/"+node, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lab reboot: reaching the lab's supervisor (is the lab in %s up?): %w", dir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	var res RebootResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("lab reboot: reading the answer: %w", err)
	}
	return &res, nil
}

var nnceGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkconfigurationenactments"}

// Enactment is an Available enactment: when it became Available, and the
// object's version (any status write changes it).
type Enactment struct {
	Since           time.Time
	ResourceVersion string
}

// AvailableEnactments lists the node's enactments whose Available
// condition is True.
func AvailableEnactments(ctx context.Context, kubeconfig, node string) (map[string]Enactment, error) {
	dyn, err := dynamicFor(kubeconfig)
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(nnceGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing enactments: %w", err)
	}
	out := map[string]Enactment{}
	for _, e := range list.Items {
		if !strings.HasPrefix(e.GetName(), node+".") {
			continue
		}
		if t, ok := availableSince(&e); ok {
			out[e.GetName()] = Enactment{Since: t, ResourceVersion: e.GetResourceVersion()}
		}
	}
	return out, nil
}

func dynamicFor(kubeconfig string) (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return dynamic.NewForConfig(cfg)
}

func availableSince(e *unstructured.Unstructured) (time.Time, bool) {
	conds, _, _ := unstructured.NestedSlice(e.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Available" || m["status"] != "True" {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		t, err := time.Parse(time.RFC3339, s)
		return t, err == nil
	}
	return time.Time{}, false
}

// RebootNotBefore is when a reboot may start for WaitAvailableAgain to
// tell the enactments of before Available anew. Condition times have whole
// seconds: a reboot begun in the second an enactment became Available
// would take that Available, once any write changed the enactment (a
// drift report), for the one after the reboot, before the policy was
// applied again.
func RebootNotBefore(before map[string]Enactment) time.Time {
	var latest time.Time
	for _, e := range before {
		if e.Since.After(latest) {
			latest = e.Since
		}
	}
	return latest.Truncate(time.Second).Add(time.Second)
}

// WaitAvailableAgain waits until every enactment of before is Available
// anew: written since (its version differs) and Available from since on
// (API times have whole seconds; since no earlier than
// RebootNotBefore(before)). It returns when it saw that, polling
// every 200 ms, finer than the conditions' own whole seconds.
func WaitAvailableAgain(ctx context.Context, kubeconfig, node string, before map[string]Enactment, since time.Time, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	floor := since.Truncate(time.Second)
	for {
		avail, err := AvailableEnactments(ctx, kubeconfig, node)
		var missing []string
		for _, n := range slices.Sorted(maps.Keys(before)) {
			e, ok := avail[n]
			if err != nil || !ok || e.Since.Before(floor) || e.ResourceVersion == before[n].ResourceVersion {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("enactments not Available again after the reboot: %s", strings.Join(missing, ", "))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
