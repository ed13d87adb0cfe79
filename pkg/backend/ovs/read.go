package ovs

import (
	"context"
	"fmt"

	"github.com/knmstate/knmstate/pkg/ovsdb"
)

const dbName = "Open_vSwitch"

// snapshot is the part of OVSDB knmstate reads, one consistent read.
type snapshot struct {
	root    ovsdb.Row
	bridges []ovsdb.Row
	ports   map[ovsdb.UUID]ovsdb.Row
	ifaces  map[ovsdb.UUID]ovsdb.Row
}

var (
	bridgeCols = []string{"_uuid", "name", "ports", "stp_enable", "rstp_enable", "mcast_snooping_enable", "fail_mode", "datapath_type", "external_ids", "other_config"}
	portCols   = []string{"_uuid", "name", "interfaces", "tag", "vlan_mode", "trunks", "bond_mode", "lacp", "bond_updelay", "bond_downdelay", "external_ids", "other_config"}
	ifaceCols  = []string{"_uuid", "name", "type", "options", "mac", "external_ids", "other_config", "error", "ofport"}
)

// read selects the four tables in one transaction.
func read(ctx context.Context, c *ovsdb.Client) (*snapshot, error) {
	res, err := c.Transact(ctx, dbName,
		ovsdb.Operation{Op: "select", Table: "Open_vSwitch", Columns: []string{"_uuid", "bridges", "external_ids", "other_config", "next_cfg", "cur_cfg"}},
		ovsdb.Operation{Op: "select", Table: "Bridge", Columns: bridgeCols},
		ovsdb.Operation{Op: "select", Table: "Port", Columns: portCols},
		ovsdb.Operation{Op: "select", Table: "Interface", Columns: ifaceCols},
	)
	if err != nil {
		return nil, fmt.Errorf("reading the OVS database: %w", err)
	}
	s := &snapshot{ports: map[ovsdb.UUID]ovsdb.Row{}, ifaces: map[ovsdb.UUID]ovsdb.Row{}}
	if len(res[0].Rows) != 1 {
		return nil, fmt.Errorf("reading the OVS database: %d Open_vSwitch rows, want 1 (is it initialised?)", len(res[0].Rows))
	}
	s.root = res[0].Rows[0]
	s.bridges = res[1].Rows
	for _, r := range res[2].Rows {
		s.ports[r.UUID()] = r
	}
	for _, r := range res[3].Rows {
		s.ifaces[r.UUID()] = r
	}
	return s, nil
}

func (s *snapshot) bridge(name string) ovsdb.Row {
	for _, b := range s.bridges {
		if b.String("name") == name {
			return b
		}
	}
	return nil
}

// portOwner returns the bridge holding port u.
func (s *snapshot) portOwner(u ovsdb.UUID) ovsdb.Row {
	for _, b := range s.bridges {
		for _, p := range b.UUIDs("ports") {
			if p == u {
				return b
			}
		}
	}
	return nil
}
