package noded

import (
	"context"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestDHCPHostnameWhenConfigEmpty: the switch's DHCP server names the
// node dyn-node7. While the node has a static hostname the lease's name is
// ignored; once `hostname.config: ""` is applied (HostnameDynamic) the
// runtime makes it the running hostname, and Show reports config "" with
// the DHCP name running. Applying a static hostname again wins over it.
func TestDHCPHostnameWhenConfigEmpty(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{NodeNamespaces: true, DnsmasqExtra: []string{"dhcp-host=*:*:*:*:*:*,dyn-node7"}})
	rt := startRuntime(t, node, "")
	ctx := context.Background()
	hostname := func() nmstate.Hostname {
		t.Helper()
		st, err := rt.b.Show(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Hostname == nil || st.Hostname.Running == nil || st.Hostname.Config == nil {
			t.Fatalf("show reports no hostname: %+v", st.Hostname)
		}
		return *st.Hostname
	}
	execute := func(ops ...nmstate.Op) {
		t.Helper()
		if err := rt.b.Execute(ctx, &nmstate.Plan{Ops: ops}); err != nil {
			t.Fatalf("execute %v: %v", ops, err)
		}
	}
	execute(nmstate.HostnameSet{Name: "static-a"})
	rt.update(t, "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n  ipv4: {enabled: true, dhcp: true}\n")
	l := waitLease(t, rt.Runtime, "eth0", 4)
	if l.Hostname != "dyn-node7" {
		t.Fatalf("the lease names host %q, want dyn-node7 (dnsmasq's dhcp-host)", l.Hostname)
	}
	if h := hostname(); *h.Running != "static-a" || *h.Config != "static-a" {
		t.Errorf("with a static hostname the lease's name was taken: running %s, config %s", *h.Running, *h.Config)
	}

	execute(nmstate.HostnameDynamic{})
	rt.update(t, "hostname: {config: \"\"}\n")
	eventually(t, 30*time.Second, func() string {
		if h := hostname(); *h.Running != "dyn-node7" || *h.Config != "" {
			return "hostname running " + *h.Running + ", config " + *h.Config + "; want dyn-node7 from DHCP and config \"\""
		}
		return ""
	})

	execute(nmstate.HostnameSet{Name: "static-b"})
	rt.update(t, "hostname: {config: static-b}\n")
	if h := hostname(); *h.Running != "static-b" || *h.Config != "static-b" {
		t.Errorf("a static hostname after the DHCP one: running %s, config %s, want static-b", *h.Running, *h.Config)
	}
}
