package nm

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Keyfile is one NetworkManager profile file.
type Keyfile struct {
	// Name is the file name (<id>.nmconnection).
	Name string
	Data []byte
}

// GenerateKeyfiles renders the profiles a state becomes, without a node
// (`nmstatectl gc`): the state is merged over an empty current state and
// profiles get stable UUIDs, so the same state always gives the same
// files. Keys use NetworkManager 1.42's names (master/slave-type).
func GenerateKeyfiles(desired *nmstate.State) ([]Keyfile, error) {
	m, err := nmstate.Merge(desired.Clone(), assumedNICs(desired))
	if err != nil {
		return nil, err
	}
	pp, err := PlanProfiles(m, nil, nil, func(ifc *nmstate.Interface) string { return StableUUID(ifc.Type, ifc.Name) })
	if err != nil {
		return nil, err
	}
	var out []Keyfile
	for _, p := range pp.Profiles {
		data, err := RenderKeyfile(p.Settings)
		if err != nil {
			return nil, fmt.Errorf("interfaces[name=%s]: %w", p.Name, err)
		}
		id, _ := p.Settings["connection"]["id"].Value().(string)
		out = append(out, Keyfile{Name: id + ".nmconnection", Data: data})
	}
	return out, nil
}

// assumedNICs is the current state gc merges over: the ethernet
// interfaces the state names (itself, as bridge ports, as base
// interfaces) exist, down and unconfigured; nothing else does.
func assumedNICs(desired *nmstate.State) *nmstate.State {
	cur := &nmstate.State{}
	defined := map[string]bool{}
	for _, ifc := range desired.Interfaces {
		if ifc.Type != nmstate.TypeEthernet && ifc.Type != "" {
			defined[ifc.Name] = true
		}
	}
	seen := map[string]bool{}
	add := func(name string) {
		if name == "" || defined[name] || seen[name] {
			return
		}
		seen[name] = true
		cur.Interfaces = append(cur.Interfaces, nmstate.Interface{Name: name, Type: nmstate.TypeEthernet, State: nmstate.StateDown})
	}
	for _, ifc := range desired.Interfaces {
		if ifc.Type == nmstate.TypeEthernet || ifc.Type == "" {
			add(ifc.Name)
		}
		if ifc.LinuxBridge != nil {
			for _, p := range ifc.LinuxBridge.Port {
				add(p.Name)
			}
		}
		for _, name := range ovsPortNames(&ifc) {
			add(name)
		}
		for _, mv := range []*nmstate.MacVlan{ifc.MacVlan, ifc.MacVtap} {
			if mv != nil && mv.BaseIface != nil {
				add(*mv.BaseIface)
			}
		}
		addTypeNICs(ifc, add)
	}
	return cur
}

// keyfileSection renames settings whose keyfile section has an alias.
var keyfileSection = map[string]string{"802-3-ethernet": "ethernet"}

// sectionOrder puts connection first, the IP settings last, as
// NetworkManager writes them.
func sectionRank(s string) int {
	switch s {
	case "connection":
		return 0
	case "ipv4":
		return 2
	case "ipv6":
		return 3
	}
	return 1
}

// RenderKeyfile renders a profile in NetworkManager's keyfile format.
func RenderKeyfile(s Settings) ([]byte, error) {
	secs := sortedKeys(s)
	sort.SliceStable(secs, func(i, j int) bool { return sectionRank(secs[i]) < sectionRank(secs[j]) })
	var b strings.Builder
	for i, sec := range secs {
		if i > 0 {
			b.WriteString("\n")
		}
		name := sec
		if alias, ok := keyfileSection[sec]; ok {
			name = alias
		}
		fmt.Fprintf(&b, "[%s]\n", name)
		props := s[sec]
		for _, k := range sortedKeys(props) {
			v := props[k]
			if lines, ok := typeKeyfileLines(sec, k, v); ok {
				for _, l := range lines {
					b.WriteString(l + "\n")
				}
				continue
			}
			switch k {
			case "address-data":
				for n, a := range v.Value().([]map[string]dbus.Variant) {
					fmt.Fprintf(&b, "address%d=%s/%d\n", n+1, a["address"].Value(), a["prefix"].Value())
				}
				continue
			case "route-data":
				for n, r := range v.Value().([]map[string]dbus.Variant) {
					writeRoute(&b, n+1, r)
				}
				continue
			case "routing-rules":
				for n, r := range v.Value().([]map[string]dbus.Variant) {
					fmt.Fprintf(&b, "routing-rule%d=%s\n", n+1, ruleText(r))
				}
				continue
			case "dns":
				var addrs []string
				switch vv := v.Value().(type) {
				case []uint32:
					for _, u := range vv {
						addrs = append(addrs, netip.AddrFrom4([4]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}).String())
					}
				case [][]byte:
					for _, raw := range vv {
						a, _ := netip.AddrFromSlice(raw)
						addrs = append(addrs, a.String())
					}
				}
				fmt.Fprintf(&b, "dns=%s;\n", strings.Join(addrs, ";"))
				continue
			case "vfs":
				writeVFs(&b, v)
				continue
			case "data": // ovs-external-ids, ovs-other-config
				keyfileOVSData(&b, v.Value())
				continue
			case "trunks":
				fmt.Fprintf(&b, "trunks=%s\n", keyfileTrunks(v.Value()))
				continue
			case "assigned-mac-address": // D-Bus's name of the keyfile's cloned-mac-address
				fmt.Fprintf(&b, "cloned-mac-address=%s\n", v.Value())
				continue
			}
			text, err := keyfileValue(v.Value())
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", sec, k, err)
			}
			fmt.Fprintf(&b, "%s=%s\n", keyfileKey(k), text)
		}
	}
	return []byte(b.String()), nil
}

func keyfileValue(v any) (string, error) {
	switch vv := v.(type) {
	case string:
		return vv, nil
	case bool:
		return strconv.FormatBool(vv), nil
	case uint32:
		return strconv.FormatUint(uint64(vv), 10), nil
	case int32:
		return strconv.FormatInt(int64(vv), 10), nil
	case int64:
		return strconv.FormatInt(vv, 10), nil
	case uint64:
		return strconv.FormatUint(vv, 10), nil
	case []byte:
		return blobKeyfile(vv)
	case []string:
		if len(vv) == 0 {
			return "", nil
		}
		return strings.Join(vv, ";") + ";", nil
	}
	return "", fmt.Errorf("no keyfile form for %T", v)
}

func writeRoute(b *strings.Builder, n int, r map[string]dbus.Variant) {
	fmt.Fprintf(b, "route%d=%s/%d", n, r["dest"].Value(), r["prefix"].Value())
	hop, hasHop := r["next-hop"]
	metric, hasMetric := r["metric"]
	switch {
	case hasHop && hasMetric:
		fmt.Fprintf(b, ",%s,%d", hop.Value(), metric.Value())
	case hasHop:
		fmt.Fprintf(b, ",%s", hop.Value())
	case hasMetric:
		fmt.Fprintf(b, ",,%d", metric.Value())
	}
	b.WriteString("\n")
	var opts []string
	for _, k := range sortedKeys(r) {
		switch k {
		case "dest", "prefix", "next-hop", "metric":
			continue
		}
		text, _ := keyfileValue(r[k].Value())
		opts = append(opts, k+"="+text)
	}
	if len(opts) > 0 {
		fmt.Fprintf(b, "route%d_options=%s\n", n, strings.Join(opts, ","))
	}
}

// ruleText is a routing rule in the string form NetworkManager's keyfiles
// (and nmcli) use.
func ruleText(r map[string]dbus.Variant) string {
	var parts []string
	if v, ok := r["priority"]; ok {
		parts = append(parts, fmt.Sprintf("priority %d", v.Value()))
	}
	if v, ok := r["from"]; ok {
		parts = append(parts, fmt.Sprintf("from %s/%d", v.Value(), r["from-len"].Value()))
	}
	if v, ok := r["to"]; ok {
		parts = append(parts, fmt.Sprintf("to %s/%d", v.Value(), r["to-len"].Value()))
	}
	if v, ok := r["iifname"]; ok {
		parts = append(parts, fmt.Sprintf("iif %s", v.Value()))
	}
	if v, ok := r["fwmark"]; ok {
		parts = append(parts, fmt.Sprintf("fwmark 0x%x/0x%x", v.Value(), r["fwmask"].Value()))
	}
	if v, ok := r["suppress-prefixlength"]; ok {
		parts = append(parts, fmt.Sprintf("suppress_prefixlength %d", v.Value()))
	}
	if v, ok := r["table"]; ok {
		parts = append(parts, fmt.Sprintf("table %d", v.Value()))
	}
	if v, ok := r["action"]; ok {
		parts = append(parts, map[byte]string{6: "blackhole", 7: "unreachable", 8: "prohibit"}[v.Value().(byte)])
	}
	if len(parts) == 0 || r["from"].Value() == nil && r["to"].Value() == nil {
		// A rule needs a family NetworkManager can tell: "from all".
		if fam, _ := r["family"].Value().(int32); fam == 10 {
			parts = append([]string{parts[0], "from ::/0"}, parts[1:]...)
		} else if len(parts) > 0 {
			parts = append([]string{parts[0], "from 0.0.0.0/0"}, parts[1:]...)
		}
	}
	return strings.Join(parts, " ")
}
