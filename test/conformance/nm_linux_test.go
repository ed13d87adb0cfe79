package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// newNMNode is newNode with a private NetworkManager managing the node's
// namespace, reached through the NetworkManager backend. Its resolv.conf
// is the one NetworkManager renders in its run directory, so the direct
// DNS check reads what NetworkManager would hand the resolver.
// TestHostExamplesNetworkManager runs the host lane's scenarios through
// the NetworkManager backend, with the same checks as the kernel backend.
// checkNM asks NetworkManager itself (nmcli, not the backend) whether
// each interface desired up is connected through a profile, so a pass
// cannot come from the kernel touch-up alone.
func (n *node) checkNM(ctx context.Context, desired *nmstate.State) error {
	var errs []error
	for _, ifc := range desired.Interfaces {
		if ifc.State != "" && ifc.State != nmstate.StateUp {
			continue
		}
		out, err := nmrun.Nmcli(ctx, n.nmBus, "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", ifc.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: nmcli: %v: %s", ifc.Name, err, out))
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "100") || lines[1] == "" {
			errs = append(errs, fmt.Errorf("%s: not connected by NetworkManager: %q", ifc.Name, lines))
		}
	}
	return errors.Join(errs...)
}

// gcKnown lists gc outputs that NetworkManager loads and activates but
// that do not reach the whole desired state by NetworkManager alone (the
// apply path's kernel touch-up completes them); each must still fail.
// (Empty since nmrun's sysfs is writable where NetworkManager writes
// bridge port options: the path-cost of linuxbrige_eth1_up.yml was one.)
var gcKnown = map[string]string{}

// TestGCKeyfilesLoadAndVerify: for the first step of every host scenario,
// the keyfiles `nmstatectl gc` renders are loaded by NetworkManager
// (`nmcli connection load`), activated with nmcli, and the node then
// shows the desired state (Verify against the backend's Show, and the
// direct netlink check). Hostname is no profile: static_hostname.yml
// renders no file and is skipped by name.
