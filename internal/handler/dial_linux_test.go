package handler

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// listenIn opens a TCP listener on 127.0.0.1 inside ns that answers every
// connection with token.
func listenIn(t *testing.T, ns *nstest.NS, token string) string {
	t.Helper()
	var l net.Listener
	if err := ns.Do(func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatalf("listening in %s: %v", ns.Name, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(token + "\n"))
			c.Close()
		}
	}()
	return l.Addr().String()
}

func TestNetNSDialerConnectsInsideNamespace(t *testing.T) {
	ns := nstest.New(t)
	addr := listenIn(t, ns, "inside-"+ns.Name)
	d := &NetNSDialer{Path: ns.Path}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dialing %s from %s: %v", addr, ns.Name, err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	// The listener lives on the namespace's own loopback: only a socket
	// created inside it can have reached it.
	if got, want := strings.TrimSpace(line), "inside-"+ns.Name; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	// The name form (under /run/netns) works as well.
	d = &NetNSDialer{Path: ns.Name}
	c2, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dialing by namespace name: %v", err)
	}
	c2.Close()
}

func TestNetNSDialerReachesAPIFromHostNamespace(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Dial = (&NetNSDialer{Path: "/proc/self/ns/net"}).DialContext
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("API call dialed from the host namespace: %v", err)
	}
	t.Logf("API server %s reached", v.GitVersion)
}

func TestNetNSDialerIsolatedNamespaceFailsFast(t *testing.T) {
	// The API server listens on the host's loopback, which a fresh
	// namespace (its own loopback, nothing else) cannot reach.
	ns := nstest.New(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Dial = (&NetNSDialer{Path: ns.Path}).DialContext
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	begin := time.Now()
	_, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	elapsed := time.Since(begin)
	if err == nil {
		t.Fatal("API call from an isolated namespace succeeded")
	}
	for _, want := range []string{"from network namespace " + ns.Path, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("isolated namespace: failed after %v: %v", elapsed.Round(time.Millisecond), err)
}

func TestNetNSDialerMissingNamespace(t *testing.T) {
	d := &NetNSDialer{Path: "/run/netns/knmstate-no-such-namespace"}
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "knmstate-no-such-namespace") || !strings.Contains(err.Error(), "opening network namespace") {
		t.Errorf("dial from a missing namespace: %v", err)
	}
}

func TestAPIConfigRateLimit(t *testing.T) {
	tests := []struct {
		name  string
		in    rest.Config
		qps   float32
		burst int
	}{
		{"kubeconfig without limits gets the handler's", rest.Config{Host: "h"}, DefaultQPS, DefaultBurst},
		{"limits given are kept", rest.Config{Host: "h", QPS: 3, Burst: 7}, 3, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			got := apiConfig(Options{Node: "n", Config: &in, Version: "v"})
			if got.QPS != tt.qps || got.Burst != tt.burst {
				t.Errorf("QPS, Burst = %v, %d; want %v, %d", got.QPS, got.Burst, tt.qps, tt.burst)
			}
			if in.QPS != tt.in.QPS {
				t.Errorf("caller's config changed: QPS %v", in.QPS)
			}
		})
	}
}
