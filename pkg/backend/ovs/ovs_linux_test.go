package ovs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// node is a fresh namespace with two NICs (veths to a second namespace)
// and its own Open vSwitch (userspace datapath: this kernel has no
// openvswitch module).
type node struct {
	ns       *nstest.NS
	ovs      *ovsrun.OVS
	b        *ovs.Backend
	stateDir string
}

func newNode(t *testing.T) *node {
	t.Helper()
	n, sw := nstest.New(t), nstest.New(t)
	nstest.Veth(t, n, "eth1", sw, "sw-eth1")
	nstest.Veth(t, n, "eth2", sw, "sw-eth2")
	o := ovsrun.ForTest(t, n.Path)
	kb, err := kernel.Open(context.Background(), kernel.Options{NetNS: n.Path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	b := ovs.Open(context.Background(), kb, ovs.Options{Address: o.Address, DefaultDatapath: testDatapath})
	t.Cleanup(func() { b.Close() })
	if err := b.Connected(); err != nil {
		t.Fatal(err)
	}
	return &node{ns: n, ovs: o, b: b, stateDir: filepath.Join(t.TempDir(), "state")}
}

func (n *node) apply(t *testing.T, doc string) (*apply.Result, error) {
	t.Helper()
	d, err := nmstate.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return apply.Apply(ctx, n.b, d, apply.Options{StateDir: n.stateDir, VerifyInterval: 100 * time.Millisecond, NetNS: n.ns.Path})
}

func (n *node) mustApply(t *testing.T, doc string) {
	t.Helper()
	if _, err := n.apply(t, doc); err != nil {
		t.Fatalf("apply: %v", err)
	}
	n.fixedPoint(t, doc)
}

// fixedPoint: planning the same state again against the re-read node is
// empty.
func (n *node) fixedPoint(t *testing.T, doc string) {
	t.Helper()
	d, _ := nmstate.Decode([]byte(doc))
	ctx := context.Background()
	res, err := apply.Apply(ctx, n.b, d, apply.Options{DryRun: true})
	if err != nil {
		t.Fatalf("planning again: %v", err)
	}
	if !res.Plan.Empty() {
		t.Errorf("planning again is not empty:\n%s", res.Plan)
	}
}

func (n *node) show(t *testing.T) *nmstate.State {
	t.Helper()
	s, err := n.b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func example(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "conformance", "testdata", "nmstate-examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOVSBridgeCreateShowDelete(t *testing.T) {
	n := newNode(t)
	n.mustApply(t, example(t, "ovsbridge_create.yml"))
	s := n.show(t)
	br := s.FindTyped("ovs-br0", nmstate.TypeOVSBridge)
	if br == nil {
		t.Fatalf("no ovs-br0 in show")
	}
	var ports []string
	for _, p := range br.OVSBridge.Port {
		ports = append(ports, p.Name)
	}
	if diff := cmp.Diff([]string{"eth1", "ovs0"}, ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if o := br.OVSBridge.Options; o == nil || o.STP == nil || !*o.STP.Enabled {
		t.Errorf("stp not enabled: %+v", o)
	}
	ovs0 := s.FindTyped("ovs0", nmstate.TypeOVSInterface)
	if ovs0 == nil || ovs0.Controller == nil || *ovs0.Controller != "ovs-br0" {
		t.Fatalf("ovs0 = %+v, want an ovs-interface of ovs-br0", ovs0)
	}
	if ovs0.IPv4 == nil || len(ovs0.IPv4.Address) == 0 || ovs0.IPv4.Address[0].IP.String() != "192.0.2.1" {
		t.Errorf("ovs0 ipv4 = %+v, want 192.0.2.1/24", ovs0.IPv4)
	}
	// The internal port is a real kernel link in the node's namespace.
	if _, err := n.ns.Netlink.LinkByName("ovs0"); err != nil {
		t.Errorf("ovs0 is not a kernel link in the node: %v", err)
	}
	if eth1 := s.FindTyped("eth1", ""); eth1.Controller == nil || *eth1.Controller != "ovs-br0" {
		t.Errorf("eth1 controller = %v, want ovs-br0", eth1.Controller)
	}

	n.mustApply(t, example(t, "ovsbridge_delete.yml"))
	s = n.show(t)
	if s.FindTyped("ovs-br0", nmstate.TypeOVSBridge) != nil || s.FindTyped("ovs0", "") != nil {
		t.Errorf("ovs-br0 or ovs0 left after delete")
	}
	if _, err := n.ns.Netlink.LinkByName("ovs0"); err == nil {
		t.Errorf("ovs0 still a kernel link after delete")
	}
}

func TestOVSBondVLANPatchAndGlobal(t *testing.T) {
	n := newNode(t)
	n.mustApply(t, example(t, "ovsbridge_bond_create.yml"))
	s := n.show(t)
	br := s.FindTyped("ovs-br0", nmstate.TypeOVSBridge)
	if br == nil || len(br.OVSBridge.Port) != 1 || br.OVSBridge.Port[0].LinkAggregation == nil {
		t.Fatalf("ovs-br0 = %+v, want one bond port", br)
	}
	if m := br.OVSBridge.Port[0].LinkAggregation.Mode; m == nil || *m != "balance-slb" {
		t.Errorf("bond mode = %v", m)
	}
	n.mustApply(t, example(t, "ovsbridge_vlan_port.yml"))
	n.mustApply(t, example(t, "ovsbridge_patch_create.yml"))
	s = n.show(t)
	if p := s.FindTyped("patch0", nmstate.TypeOVSInterface); p == nil || p.Patch == nil || p.Patch.Peer != "patch1" {
		t.Errorf("patch0 = %+v, want a patch to patch1", p)
	}
	n.mustApply(t, `
ovs-db:
  external_ids:
    owner: knmstate
  other_config:
    stats-update-interval: "5000"
ovn:
  bridge-mappings:
  - localnet: physnet1
    bridge: ovs-br1
interfaces:
- name: patch0
  type: ovs-interface
  ovs-db:
    external_ids:
      team: net
`)
	s = n.show(t)
	if s.OVN == nil || len(s.OVN.BridgeMappings) != 1 || *s.OVN.BridgeMappings[0].Bridge != "ovs-br1" {
		t.Errorf("ovn = %+v", s.OVN)
	}
	n.mustApply(t, example(t, "ovsbridge_patch_delete.yml"))
	if _, err := n.apply(t, example(t, "ovsbridge_dpdk_create.yml")); err == nil || !strings.Contains(err.Error(), "DPDK") {
		t.Errorf("dpdk example: err = %v, want a refusal naming DPDK", err)
	}
}

// dump renders the configuration columns of the OVS tables by name (uuids
// replaced by the names of the rows they point to), for before/after
// comparisons; the columns ovs-vswitchd writes (status, statistics,
// ofport, ...) are left out.
func dump(t *testing.T, addr string) string {
	t.Helper()
	ctx := context.Background()
	c, err := ovsdb.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cols := map[string][]string{
		"Open_vSwitch": {"bridges", "external_ids", "other_config"},
		"Bridge":       {"name", "ports", "stp_enable", "rstp_enable", "mcast_snooping_enable", "fail_mode", "datapath_type", "external_ids", "other_config"},
		"Port":         {"name", "interfaces", "tag", "vlan_mode", "trunks", "bond_mode", "lacp", "bond_updelay", "bond_downdelay", "external_ids", "other_config"},
		"Interface":    {"name", "type", "options", "mac", "external_ids", "other_config"},
	}
	tables := []string{"Open_vSwitch", "Bridge", "Port", "Interface"}
	var ops []ovsdb.Operation
	for _, tb := range tables {
		ops = append(ops, ovsdb.Operation{Op: "select", Table: tb, Columns: append([]string{"_uuid"}, cols[tb]...)})
	}
	res, err := c.Transact(ctx, "Open_vSwitch", ops...)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range res {
		for _, row := range r.Rows {
			if n := row.String("name"); n != "" {
				names[string(row.UUID())] = n
			}
		}
	}
	var out []string
	for i, tb := range tables {
		var rows []string
		for _, row := range res[i].Rows {
			var cells []string
			for _, col := range cols[tb] {
				v := string(row[col])
				for u, n := range names {
					v = strings.ReplaceAll(v, u, n)
				}
				cells = append(cells, col+"="+sortedSet(v))
			}
			rows = append(rows, tb+" "+strings.Join(cells, " "))
		}
		sort.Strings(rows)
		out = append(out, rows...)
	}
	return strings.Join(out, "\n")
}

// sortedSet renders an OVSDB set (["set",[...]]) with its elements in a
// fixed order: a set has none, and a rewrite may list them differently.
func sortedSet(v string) string {
	var set []json.RawMessage
	if err := json.Unmarshal([]byte(v), &set); err != nil || len(set) != 2 || string(set[0]) != `"set"` {
		return v
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(set[1], &elems); err != nil {
		return v
	}
	l := make([]string, len(elems))
	for i, e := range elems {
		l[i] = string(e)
	}
	sort.Strings(l)
	return `["set",[` + strings.Join(l, ",") + `]]`
}

// A failing apply (its route cannot be installed, after the OVS
// transaction went through) leaves OVSDB exactly as before: the rollback
// restores the tables in one transaction.
func TestFailedApplyLeavesOVSDBAsBefore(t *testing.T) {
	n := newNode(t)
	n.mustApply(t, `
ovs-db:
  external_ids:
    keep: "1"
interfaces:
- name: ovs-br0
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: false
    port:
    - name: eth1
    - name: ovs0
      vlan:
        mode: access
        tag: 5
- name: ovs0
  type: ovs-interface
  state: up
  ipv4:
    enabled: true
    address:
    - ip: 192.0.2.1
      prefix-length: 24
`)
	before := dump(t, n.ovs.Address)
	kernelBefore := n.show(t)
	_, err := n.apply(t, `
ovs-db:
  external_ids:
    keep: null
    added: "2"
ovn:
  bridge-mappings:
  - localnet: net1
    bridge: ovs-br0
interfaces:
- name: ovs-br0
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: true
    port:
    - name: eth2
    - name: ovs0
    - name: new0
- name: new0
  type: ovs-interface
  state: up
  ipv4:
    enabled: true
    address:
    - ip: 198.51.100.1
      prefix-length: 24
- name: ovs-br1
  type: ovs-bridge
  state: up
  bridge:
    port:
    - name: eth1
routes:
  config:
  - destination: 203.0.113.0/24
    next-hop-address: 192.0.2.254
    next-hop-interface: new0
`)
	var f *apply.Failure
	if !errors.As(err, &f) {
		t.Fatalf("apply: err = %v, want a failure after the first change", err)
	}
	if f.Rollback != nil {
		t.Fatalf("rollback failed: %v", f.Rollback)
	}
	t.Logf("failure: %v", f.Err)
	if !strings.Contains(f.Err.Error(), "route replace 203.0.113.0/24") {
		t.Errorf("failed for another reason than the route: %v", f.Err)
	}
	if !strings.Contains(f.Plan.String(), "ovs bridge set ovs-br1") {
		t.Fatalf("the OVS transaction was not part of the failed plan:\n%s", f.Plan)
	}
	if diff := cmp.Diff(before, dump(t, n.ovs.Address)); diff != "" {
		t.Errorf("OVSDB after the failed apply (-before +after):\n%s", diff)
	}
	after := n.show(t)
	if diff := cmp.Diff(names(kernelBefore), names(after)); diff != "" {
		t.Errorf("interfaces after the failed apply (-before +after):\n%s", diff)
	}
}

func names(s *nmstate.State) []string {
	var out []string
	for _, i := range s.Interfaces {
		ctrl := ""
		if i.Controller != nil {
			ctrl = *i.Controller
		}
		out = append(out, i.Name+":"+string(i.Type)+":"+ctrl)
	}
	return out
}

// Without a reachable OVSDB an OVS state fails with a message saying so,
// and nothing changes.
func TestNoOVSDB(t *testing.T) {
	n := nstest.New(t)
	nstest.Veth(t, n, "eth1", nstest.New(t), "sw-eth1")
	kb, err := kernel.Open(context.Background(), kernel.Options{NetNS: n.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	b := ovs.Open(context.Background(), kb, ovs.Options{Address: "unix:" + t.TempDir() + "/none.sock"})
	defer b.Close()
	before, err := b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := nmstate.Decode([]byte(example(t, "ovsbridge_create.yml")))
	_, err = apply.Apply(context.Background(), b, d, apply.Options{StateDir: t.TempDir(), VerifyInterval: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "the OVS database is not reachable") {
		t.Fatalf("err = %v, want one saying the OVS database is not reachable", err)
	}
	after, _ := b.Show(context.Background())
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	if string(bj) != string(aj) {
		t.Errorf("the node changed:\nbefore %s\nafter  %s", bj, aj)
	}
}

// An OVS that starts after the backend was opened (a handler that starts
// before its node's OVS) is picked up by the next apply; until then an OVS
// state is refused naming the socket.
func TestOVSStartsLater(t *testing.T) {
	n := nstest.New(t)
	nstest.Veth(t, n, "eth1", nstest.New(t), "sw-eth1")
	dir := t.TempDir()
	var o *ovsrun.OVS
	t.Cleanup(func() {
		if o != nil {
			_ = o.Stop()
		}
	})
	kb, err := kernel.Open(context.Background(), kernel.Options{NetNS: n.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	addr := "unix:" + filepath.Join(dir, "db.sock")
	b := ovs.Open(context.Background(), kb, ovs.Options{Address: addr, DefaultDatapath: testDatapath})
	defer b.Close()
	d, _ := nmstate.Decode([]byte(example(t, "ovsbridge_create.yml")))
	opts := apply.Options{StateDir: t.TempDir(), VerifyInterval: 100 * time.Millisecond}
	_, err = apply.Apply(context.Background(), b, d.Clone(), opts)
	if err == nil || !strings.Contains(err.Error(), "the OVS database is not reachable at "+addr) {
		t.Fatalf("before OVS starts: err = %v, want one naming the unreachable socket", err)
	}
	if o, err = ovsrun.Start(context.Background(), ovsrun.Options{Dir: dir, NetNS: n.Path}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(context.Background(), b, d.Clone(), opts); err != nil {
		t.Fatalf("after OVS started: %v", err)
	}
	s, err := b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.FindTyped("ovs-br0", nmstate.TypeOVSBridge) == nil {
		t.Errorf("no ovs-br0 in show after OVS started")
	}
}

// An ovs-bridge's description (upstream's ovs-bridge examples have one)
// is kept in OVSDB, since the bridge has no kernel link, and shown as the
// interface's description, not in its ovs-db.
func TestOVSBridgeDescription(t *testing.T) {
	n := newNode(t)
	doc := `
interfaces:
- name: br1
  description: ovs bridge with eth1 as a port
  type: ovs-bridge
  state: up
  bridge:
    options:
      stp: false
    port:
    - name: eth1
`
	n.mustApply(t, doc)
	br := n.show(t).FindTyped("br1", nmstate.TypeOVSBridge)
	if br == nil || br.Description == nil || *br.Description != "ovs bridge with eth1 as a port" {
		t.Fatalf("br1 = %+v, want its description", br)
	}
	if br.OVSDB != nil {
		t.Errorf("br1 ovs-db = %+v, want none (the description is not an external id)", br.OVSDB)
	}
	n.mustApply(t, strings.Replace(doc, "with eth1 as a port", "renamed", 1))
	if br := n.show(t).FindTyped("br1", nmstate.TypeOVSBridge); br == nil || br.Description == nil || *br.Description != "ovs bridge renamed" {
		t.Errorf("after a new description: %+v", br)
	}
}

// OpenShift's br-ex shape: the NIC under an OVS bridge and an internal
// interface named like the bridge that copies the NIC's MAC and takes its
// address.
func TestOVSBrExShape(t *testing.T) {
	n := newNode(t)
	n.ns.AddrAdd(t, "eth1", "192.0.2.12/24")
	eth1, err := n.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	mac := eth1.Attrs().HardwareAddr.String()
	n.mustApply(t, `
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth1
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth1
  ipv4:
    enabled: true
    address:
    - {ip: 192.0.2.12, prefix-length: 24}
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: false}
`)
	l, err := n.ns.Netlink.LinkByName("br-ex")
	if err != nil {
		t.Fatalf("br-ex is not a kernel link: %v", err)
	}
	if got := l.Attrs().HardwareAddr.String(); got != mac {
		t.Errorf("br-ex MAC %s, want eth1's %s", got, mac)
	}
	s := n.show(t)
	if br := s.FindTyped("br-ex", nmstate.TypeOVSBridge); br == nil || len(br.OVSBridge.Port) != 2 {
		t.Errorf("br-ex bridge = %+v, want eth1 and br-ex as ports", br)
	}
}

// Watch signals when the node's OVS starts after it, on every change of
// OVSDB's configuration (made here by ovs-vsctl, not by us), and for every
// kernel signal; its channel closes once ctx ends and the kernel's closes.
func TestWatch(t *testing.T) {
	n := nstest.New(t)
	dir := t.TempDir()
	var o *ovsrun.OVS
	t.Cleanup(func() {
		if o != nil {
			_ = o.Stop()
		}
	})
	kb, err := kernel.Open(context.Background(), kernel.Options{NetNS: n.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	b := ovs.Open(context.Background(), kb, ovs.Options{Address: "unix:" + filepath.Join(dir, "db.sock"), DefaultDatapath: testDatapath})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kernelChanges := make(chan struct{})
	changes := b.Watch(ctx, kernelChanges)
	await := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(time.Minute): // a hang guard, not a measurement
			t.Fatalf("no change signalled: %s", what)
		}
	}
	kernelChanges <- struct{}{}
	await("a kernel change")
	if o, err = ovsrun.Start(context.Background(), ovsrun.Options{Dir: dir, NetNS: n.Path}); err != nil {
		t.Fatal(err)
	}
	await("OVS started")
	// Drain what the start itself caused, then change the database.
	select {
	case <-changes:
	default:
	}
	if out, err := exec.Command("ovs-vsctl", "--db="+o.Address, "--no-wait", "add-br", "br-w", "--", "set", "Bridge", "br-w", "datapath_type=netdev").CombinedOutput(); err != nil {
		t.Fatalf("ovs-vsctl: %v: %s", err, out)
	}
	await("ovs-vsctl add-br")
	cancel()
	close(kernelChanges)
	for range changes {
	}
}
