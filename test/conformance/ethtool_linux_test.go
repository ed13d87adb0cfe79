package conformance

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// ethtoolOf is the ethtool section the backend reports for name.
func ethtoolOf(ctx context.Context, t *testing.T, n *node, name string) nmstate.Ethtool {
	t.Helper()
	st, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := st.FindTyped(name, "")
	if i == nil || i.Ethtool == nil {
		t.Fatalf("%s has no ethtool section: %+v", name, i)
	}
	return *i.Ethtool
}

// applyEthtool applies one desired state, checks it against a fresh show
// and for the fixed point, and leaves the checkpoint pending.
func applyEthtool(ctx context.Context, t *testing.T, n *node, yaml string) {
	t.Helper()
	desired, err := nmstate.Decode([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	opts := n.options()
	opts.NoCommit = true
	res, err := apply.Apply(ctx, n.backend, desired.Clone(), opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Logf("plan:\n%s", res.Plan)
	cur, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nmstate.Verify(desired, cur); err != nil {
		t.Errorf("verify against a fresh show: %v", err)
	}
	m, err := nmstate.Merge(desired.Clone(), cur)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := nmstate.PlanChanges(m); err != nil || !p.Empty() {
		t.Errorf("fixed point broken (%v), planning again gives:\n%s", err, p)
	}
}

// TestEthtoolFeaturesOnVeth: a veth's offload features change through the
// ethtool section, the ioctl interface sees the change, and a rollback puts
// every feature back. Unknown and fixed features fail before anything
// changes, naming the feature.
func TestEthtoolFeaturesOnVeth(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	before := ethtoolOf(ctx, t, n, "eth1")
	for _, f := range []string{"rx-gro", "rx-checksum"} {
		if _, ok := before.Feature[f]; !ok {
			t.Fatalf("eth1 does not report the changeable feature %s: %v", f, before.Feature)
		}
	}
	// The opposite of what the veth has, whatever this kernel's defaults.
	gro, csum := !before.Feature["rx-gro"], !before.Feature["rx-checksum"]
	applyEthtool(ctx, t, n, `interfaces:
- name: eth1
  type: ethernet
  state: up
  ethtool:
    feature:
      rx-gro: `+onOff(gro)+`
      rx-checksum: `+onOff(csum)+`
`)
	// The ioctl interface as the independent reader: ETHTOOL_GGRO
	// (rx-gro) and ETHTOOL_GRXCSUM (rx-checksum), struct ethtool_value.
	for _, c := range []struct {
		name string
		cmd  uint32
		want bool
	}{{"rx-gro", 0x2b, gro}, {"rx-checksum", 0x14, csum}} {
		if got := ethtoolIoctl(t, n, "eth1", c.cmd, 2)[1] != 0; got != c.want {
			t.Errorf("SIOCETHTOOL says %s is %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := apply.Rollback(ctx, n.backend, n.stateDir); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if diff := cmp.Diff(before, ethtoolOf(ctx, t, n, "eth1")); diff != "" {
		t.Errorf("after the rollback eth1's ethtool section differs (-before +after):\n%s", diff)
	}

	for _, c := range []struct{ feature, want string }{
		{"rx-no-such-offload", "ethtool feature rx-no-such-offload is not a changeable feature"},
		// Fixed on a veth: it cannot be turned off.
		{"rx-all", "is not a changeable feature"},
	} {
		desired, err := nmstate.Decode([]byte(`interfaces:
- name: eth1
  type: ethernet
  state: up
  ethtool:
    feature:
      rx-gro: ` + onOff(gro) + `
      ` + c.feature + `: true
`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = apply.Apply(ctx, n.backend, desired, n.options())
		var ne *nmstate.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ne) || ne.Kind != nmstate.InvalidArgument {
			t.Errorf("%s: apply error %v, want an InvalidArgument containing %q", c.feature, err, c.want)
		}
		if diff := cmp.Diff(before, ethtoolOf(ctx, t, n, "eth1")); diff != "" {
			t.Errorf("%s: the failed apply changed eth1's ethtool section (-before +after):\n%s", c.feature, diff)
		}
	}
}

func onOff(v bool) string {
	if v {
		return "true"
	}
	return "false"
}

// ethtoolIoctl runs one SIOCETHTOOL get command on name in the node and
// returns the reply's u32 words (word 0 is cmd).
func ethtoolIoctl(t *testing.T, n *node, name string, cmd uint32, words int) []uint32 {
	t.Helper()
	buf := make([]uint32, words)
	buf[0] = cmd
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], name)
	ifr.data = uintptr(unsafe.Pointer(&buf[0]))
	err := n.ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return e
		}
		return nil
	})
	runtime.KeepAlive(buf)
	if err != nil {
		t.Fatalf("SIOCETHTOOL %#x on %s: %v", cmd, name, err)
	}
	return buf
}
