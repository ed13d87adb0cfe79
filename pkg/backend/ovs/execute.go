package ovs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// txn builds one transaction from a run of OVS operations.
type txn struct {
	snap    *snapshot
	opts    Options
	ops     []ovsdb.Operation
	named   int
	checked []string // interfaces whose error column is checked after
}

func (t *txn) name(prefix string) string {
	t.named++
	return prefix + strconv.Itoa(t.named)
}

func (b *Backend) transact(ctx context.Context, db *ovsdb.Client, plan []nmstate.Op) error {
	snap, err := read(ctx, db)
	if err != nil {
		return err
	}
	t := &txn{snap: snap, opts: b.opts}
	for _, op := range plan {
		switch o := op.(type) {
		case nmstate.OVSBridgeDelete:
			t.bridgeDelete(o.Name)
		case nmstate.OVSBridgeSet:
			t.bridgeSet(o.Bridge)
		case nmstate.OVSGlobalSet:
			row := map[string]any{}
			if o.ExternalIDs != nil {
				row["external_ids"] = ovsdb.Map(o.ExternalIDs)
			}
			if o.OtherConfig != nil {
				row["other_config"] = ovsdb.Map(o.OtherConfig)
			}
			t.ops = append(t.ops, ovsdb.Operation{Op: "update", Table: "Open_vSwitch", Row: row})
		}
	}
	// ovs-vswitchd sets cur_cfg to next_cfg once it has applied the
	// transaction (ovs-vsctl's wait).
	t.ops = append(t.ops,
		ovsdb.Operation{Op: "mutate", Table: "Open_vSwitch", Mutations: []ovsdb.Mutation{{Column: "next_cfg", Mutator: "+=", Value: 1}}},
		ovsdb.Operation{Op: "select", Table: "Open_vSwitch", Columns: []string{"next_cfg"}},
		ovsdb.Operation{Op: "comment", Comment: "knmstate: " + opsText(plan)},
	)
	res, err := db.Transact(ctx, dbName, t.ops...)
	if err != nil {
		return fmt.Errorf("%s: %w", opsText(plan), err)
	}
	rows := res[len(t.ops)-2].Rows
	if len(rows) != 1 {
		return fmt.Errorf("%s: reading next_cfg: %d rows", opsText(plan), len(rows))
	}
	next, _ := rows[0].Int("next_cfg")
	return b.waitApplied(ctx, db, next, t.checked, opsText(plan))
}

func opsText(plan []nmstate.Op) string {
	l := make([]string, 0, len(plan))
	for _, op := range plan {
		l = append(l, op.String())
	}
	return strings.Join(l, "; ")
}

// waitApplied waits until ovs-vswitchd reports cur_cfg >= next, then fails
// if one of the interfaces it was given reports an error (a port that
// cannot be opened, for example).
func (b *Backend) waitApplied(ctx context.Context, db *ovsdb.Client, next int64, ifaces []string, what string) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.ApplyTimeout)
	defer cancel()
	for {
		res, err := db.Transact(ctx, dbName,
			ovsdb.Operation{Op: "select", Table: "Open_vSwitch", Columns: []string{"cur_cfg"}},
			ovsdb.Operation{Op: "select", Table: "Interface", Columns: []string{"name", "error"}})
		if err != nil {
			return fmt.Errorf("%s: waiting for ovs-vswitchd: %w", what, err)
		}
		if cur, _ := res[0].Rows[0].Int("cur_cfg"); cur >= next {
			want := map[string]bool{}
			for _, n := range ifaces {
				want[n] = true
			}
			var errs []string
			for _, r := range res[1].Rows {
				if e := r.String("error"); e != "" && want[r.String("name")] {
					errs = append(errs, r.String("name")+": "+e)
				}
			}
			if len(errs) > 0 {
				sort.Strings(errs)
				return &nmstate.Error{Kind: nmstate.Backend, Detail: what + ": ovs-vswitchd: " + strings.Join(errs, "; ")}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: ovs-vswitchd did not apply the configuration (is it running?): %w", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (t *txn) bridgeDelete(name string) {
	br := t.snap.bridge(name)
	if br == nil {
		return
	}
	u := br.UUID()
	// Ports and interfaces go with it: they are not root rows.
	t.ops = append(t.ops,
		ovsdb.Operation{Op: "mutate", Table: "Open_vSwitch", Mutations: []ovsdb.Mutation{{Column: "bridges", Mutator: "delete", Value: ovsdb.Set{u}}}},
		ovsdb.Operation{Op: "delete", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)}})
}

func optSet(s string) ovsdb.Set {
	if s == "" {
		return ovsdb.Set{}
	}
	return ovsdb.Set{s}
}

func boolOr(b *bool) bool { return b != nil && *b }

func ovsdbMaps(o *nmstate.OVSDBIface) (ext, oc ovsdb.Map) {
	ext, oc = ovsdb.Map{}, ovsdb.Map{}
	if o == nil {
		return
	}
	for k, v := range o.ExternalIDs {
		if v != nil {
			ext[k] = *v
		}
	}
	for k, v := range o.OtherConfig {
		if v != nil {
			oc[k] = *v
		}
	}
	return
}

func (t *txn) bridgeSet(spec nmstate.OVSBridgeSpec) {
	br := t.snap.bridge(spec.Name)
	row := map[string]any{}
	o := spec.Options
	if o == nil {
		o = &nmstate.OVSBridgeOptions{}
	}
	stp := o.STP
	if stp == nil {
		stp = &nmstate.OVSBridgeSTP{}
	}
	row["stp_enable"] = boolOr(stp.Enabled)
	row["rstp_enable"] = boolOr(o.RSTP)
	row["mcast_snooping_enable"] = boolOr(o.McastSnoopingEnable)
	fail := ""
	if o.FailMode != nil {
		fail = *o.FailMode
	}
	row["fail_mode"] = optSet(fail)
	dp := t.opts.DefaultDatapath
	if o.Datapath != nil {
		dp = *o.Datapath
	}
	row["datapath_type"] = dp
	ext, oc := ovsdbMaps(spec.OVSDB)
	for key, v := range map[string]*uint16{"stp-forward-delay": stp.ForwardDelay, "stp-hello-time": stp.HelloTime,
		"stp-max-age": stp.MaxAge, "stp-priority": stp.Priority} {
		if v != nil {
			oc[key] = strconv.Itoa(int(*v))
		}
	}
	if spec.Description != nil {
		ext[descriptionKey] = *spec.Description
	}
	row["external_ids"], row["other_config"] = ext, oc
	spec.Ports = localPortMAC(spec, oc)

	// Existing ports of this bridge by name; ports elsewhere by name.
	mine := map[string]ovsdb.Row{}
	if br != nil {
		for _, pu := range br.UUIDs("ports") {
			if p, ok := t.snap.ports[pu]; ok {
				mine[p.String("name")] = p
			}
		}
	}
	var ports ovsdb.Set
	for _, ps := range spec.Ports {
		if p, ok := mine[ps.Name]; ok {
			t.portUpdate(p, ps)
			ports = append(ports, p.UUID())
			continue
		}
		t.releaseElsewhere(ps, br)
		ports = append(ports, t.portInsert(ps))
	}
	if ports == nil {
		ports = ovsdb.Set{}
	}
	row["ports"] = ports
	if br != nil {
		t.ops = append(t.ops, ovsdb.Operation{Op: "update", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", br.UUID())}, Row: row})
		return
	}
	row["name"] = spec.Name
	bn := t.name("bridge")
	t.ops = append(t.ops,
		ovsdb.Operation{Op: "insert", Table: "Bridge", UUIDName: bn, Row: row},
		ovsdb.Operation{Op: "mutate", Table: "Open_vSwitch", Mutations: []ovsdb.Mutation{{Column: "bridges", Mutator: "insert", Value: ovsdb.Set{ovsdb.NamedUUID(bn)}}}})
}

// localPortMAC moves the MAC of the bridge's local port (the internal
// interface named like the bridge: OpenShift's br-ex) to the bridge's
// other_config:hwaddr, where ovs-vswitchd takes it from (it ignores the
// Interface row's mac there), and returns the ports without it.
func localPortMAC(spec nmstate.OVSBridgeSpec, oc ovsdb.Map) []nmstate.OVSPortSpec {
	ports := make([]nmstate.OVSPortSpec, len(spec.Ports))
	for i, ps := range spec.Ports {
		ps.Interfaces = slices.Clone(ps.Interfaces)
		for j, is := range ps.Interfaces {
			if is.Name == spec.Name && is.MAC != "" {
				oc["hwaddr"] = strings.ToLower(is.MAC)
				ps.Interfaces[j].MAC = ""
			}
		}
		ports[i] = ps
	}
	return ports
}

// releaseElsewhere takes a port (by name) out of the other bridge holding
// it, so it can be inserted into this one.
func (t *txn) releaseElsewhere(ps nmstate.OVSPortSpec, this ovsdb.Row) {
	for pu, p := range t.snap.ports {
		if p.String("name") != ps.Name {
			continue
		}
		owner := t.snap.portOwner(pu)
		if owner == nil || this != nil && owner.UUID() == this.UUID() {
			continue
		}
		t.ops = append(t.ops, ovsdb.Operation{Op: "mutate", Table: "Bridge", Where: []ovsdb.Condition{ovsdb.Where("_uuid", owner.UUID())},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: "delete", Value: ovsdb.Set{pu}}}})
	}
}

func portRow(ps nmstate.OVSPortSpec) map[string]any {
	row := map[string]any{"tag": ovsdb.Set{}, "vlan_mode": ovsdb.Set{}, "trunks": ovsdb.Set{},
		"bond_mode": ovsdb.Set{}, "lacp": ovsdb.Set{}, "bond_updelay": 0, "bond_downdelay": 0}
	if v := ps.VLAN; v != nil {
		mode := "access"
		if v.Mode != nil {
			mode = string(*v.Mode)
		}
		if mode == "trunk" && v.EnableNative != nil && *v.EnableNative {
			mode = "native-untagged"
		}
		row["vlan_mode"] = ovsdb.Set{mode}
		if v.Tag != nil {
			row["tag"] = ovsdb.Set{int(*v.Tag)}
		}
		var trunks ovsdb.Set
		for _, tt := range v.TrunkTags {
			switch {
			case tt.ID != nil:
				trunks = append(trunks, int(*tt.ID))
			case tt.IDRange != nil:
				for id := int(tt.IDRange.Min); id <= int(tt.IDRange.Max); id++ {
					trunks = append(trunks, id)
				}
			}
		}
		if trunks != nil {
			row["trunks"] = trunks
		}
	}
	if b := ps.Bond; b != nil {
		mode := ""
		if b.Mode != nil {
			mode = string(*b.Mode)
		}
		switch mode {
		case "lacp":
			row["lacp"] = ovsdb.Set{"active"}
		case "balance-tcp":
			row["lacp"] = ovsdb.Set{"active"}
			row["bond_mode"] = ovsdb.Set{mode}
		case "":
		default:
			row["bond_mode"] = ovsdb.Set{mode}
		}
		if b.BondUpdelay != nil {
			row["bond_updelay"] = int(*b.BondUpdelay)
		}
		if b.BondDowndelay != nil {
			row["bond_downdelay"] = int(*b.BondDowndelay)
		}
		ext, oc := ovsdbMaps(b.OVSDB)
		row["external_ids"], row["other_config"] = ext, oc
	}
	return row
}

func (t *txn) ifaceRow(is nmstate.OVSIfaceSpec, insert bool) map[string]any {
	row := map[string]any{"type": is.Type}
	opts := ovsdb.Map{}
	if is.Type == "patch" {
		opts["peer"] = is.Peer
	}
	row["options"] = opts
	if is.MAC != "" {
		row["mac"] = ovsdb.Set{strings.ToLower(is.MAC)}
	}
	ext, oc := ovsdbMaps(is.OVSDB)
	row["external_ids"], row["other_config"] = ext, oc
	if insert {
		row["name"] = is.Name
	}
	t.checked = append(t.checked, is.Name)
	return row
}

func (t *txn) portInsert(ps nmstate.OVSPortSpec) ovsdb.NamedUUID {
	var ifs ovsdb.Set
	for _, is := range ps.Interfaces {
		n := t.name("iface")
		t.ops = append(t.ops, ovsdb.Operation{Op: "insert", Table: "Interface", UUIDName: n, Row: t.ifaceRow(is, true)})
		ifs = append(ifs, ovsdb.NamedUUID(n))
	}
	row := portRow(ps)
	row["name"] = ps.Name
	row["interfaces"] = ifs
	n := t.name("port")
	t.ops = append(t.ops, ovsdb.Operation{Op: "insert", Table: "Port", UUIDName: n, Row: row})
	return ovsdb.NamedUUID(n)
}

// portUpdate converges an existing port in place: its interfaces keep
// their rows (and ofports) where the names match.
func (t *txn) portUpdate(p ovsdb.Row, ps nmstate.OVSPortSpec) {
	have := map[string]ovsdb.UUID{}
	for _, iu := range p.UUIDs("interfaces") {
		if r, ok := t.snap.ifaces[iu]; ok {
			have[r.String("name")] = iu
		}
	}
	var ifs ovsdb.Set
	for _, is := range ps.Interfaces {
		if u, ok := have[is.Name]; ok {
			t.ops = append(t.ops, ovsdb.Operation{Op: "update", Table: "Interface", Where: []ovsdb.Condition{ovsdb.Where("_uuid", u)}, Row: t.ifaceRow(is, false)})
			ifs = append(ifs, u)
			continue
		}
		n := t.name("iface")
		t.ops = append(t.ops, ovsdb.Operation{Op: "insert", Table: "Interface", UUIDName: n, Row: t.ifaceRow(is, true)})
		ifs = append(ifs, ovsdb.NamedUUID(n))
	}
	row := portRow(ps)
	row["interfaces"] = ifs
	t.ops = append(t.ops, ovsdb.Operation{Op: "update", Table: "Port", Where: []ovsdb.Condition{ovsdb.Where("_uuid", p.UUID())}, Row: row})
}
