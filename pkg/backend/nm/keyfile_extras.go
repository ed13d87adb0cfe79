package nm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/godbus/dbus/v5"
)

// keyfileKey is the keyfile name of a D-Bus property where they differ:
// the cloned MAC travels as assigned-mac-address on D-Bus.
func keyfileKey(k string) string {
	if k == "assigned-mac-address" {
		return "cloned-mac-address"
	}
	return k
}

// blobKeyfile is a certificate or key property in a keyfile: its path
// (keyfiles hold the path of a path-scheme blob as is).
func blobKeyfile(b []byte) (string, error) {
	if p := blobPath(b); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("only certificates given by path have a keyfile form")
}

// writeVFs writes sriov.vfs as NetworkManager's keyfile writer does: one
// vf.<index> key per VF, its attributes sorted by name and space
// separated, then its VLANs (id[.qos[.ad]]).
func writeVFs(b *strings.Builder, v dbus.Variant) {
	vfs, _ := v.Value().([]map[string]dbus.Variant)
	for _, vf := range vfs {
		idx, _ := vf["index"].Value().(uint32)
		var parts []string
		for _, k := range sortedKeys(vf) {
			if k == "index" || k == "vlans" {
				continue
			}
			text, _ := keyfileValue(vf[k].Value())
			parts = append(parts, k+"="+text)
		}
		val := strings.Join(parts, " ")
		if vl, ok := vf["vlans"]; ok {
			list, _ := vl.Value().([]map[string]dbus.Variant)
			var ids []string
			sort.SliceStable(list, func(i, j int) bool {
				a, _ := list[i]["id"].Value().(uint32)
				c, _ := list[j]["id"].Value().(uint32)
				return a < c
			})
			for _, e := range list {
				id, _ := e["id"].Value().(uint32)
				qos, _ := e["qos"].Value().(uint32)
				proto, _ := e["protocol"].Value().(uint32)
				t := fmt.Sprint(id)
				if qos != 0 || proto != 0 {
					t += fmt.Sprintf(".%d", qos)
					if proto != 0 {
						t += ".ad"
					}
				}
				ids = append(ids, t)
			}
			if len(ids) > 0 {
				// NetworkManager's writer leads with a space even without
				// attributes; its reader accepts both.
				val += " vlans=" + strings.Join(ids, ";")
			}
		}
		fmt.Fprintf(b, "vf.%d=%s\n", idx, val)
	}
}
