package nm

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	nmDest        = "org.freedesktop.NetworkManager"
	nmPath        = dbus.ObjectPath("/org/freedesktop/NetworkManager")
	nmIface       = "org.freedesktop.NetworkManager"
	settingsPath  = dbus.ObjectPath("/org/freedesktop/NetworkManager/Settings")
	settingsIface = "org.freedesktop.NetworkManager.Settings"
	connIface     = "org.freedesktop.NetworkManager.Settings.Connection"
	deviceIface   = "org.freedesktop.NetworkManager.Device"
	acIface       = "org.freedesktop.NetworkManager.Connection.Active"
	dnsPath       = dbus.ObjectPath("/org/freedesktop/NetworkManager/DnsManager")
	dnsIface      = "org.freedesktop.NetworkManager.DnsManager"

	// AddConnection2 / Update2 flags.
	flagToDisk           = 0x1
	flagInMemory         = 0x2
	flagInMemoryOnly     = 0x8
	flagBlockAutoconnect = 0x20

	// CheckpointCreate flags: delete profiles and disconnect devices that
	// the apply added.
	cpDeleteNewConnections = 0x02
	cpDisconnectNewDevices = 0x04

	// Device states (more in activation.go).
	devUnmanaged = 10
)

// client wraps one private D-Bus connection to NetworkManager.
type client struct {
	conn *dbus.Conn
}

func dial(addr string) (*client, error) {
	var conn *dbus.Conn
	var err error
	if addr == "" {
		conn, err = dbus.ConnectSystemBus()
	} else {
		conn, err = dbus.Connect(addr)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	return &client{conn: conn}, nil
}

func (c *client) close() error { return c.conn.Close() }

func (c *client) obj(p dbus.ObjectPath) dbus.BusObject { return c.conn.Object(nmDest, p) }

func (c *client) call(ctx context.Context, p dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return c.obj(p).CallWithContext(ctx, method, 0, args...)
}

func (c *client) prop(p dbus.ObjectPath, name string, out any) error {
	v, err := c.obj(p).GetProperty(name)
	if err != nil {
		return fmt.Errorf("reading %s of %s: %w", name, p, err)
	}
	return dbus.Store([]any{v.Value()}, out)
}

// Available reports whether NetworkManager owns its name on the bus.
func (c *client) available(ctx context.Context) bool {
	var has bool
	err := c.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, nmDest).Store(&has)
	return err == nil && has
}

func (c *client) version() (string, error) {
	var v string
	return v, c.prop(nmPath, nmIface+".Version", &v)
}

func (c *client) profiles(ctx context.Context) ([]*profile, error) {
	var paths []dbus.ObjectPath
	if err := c.call(ctx, settingsPath, settingsIface+".ListConnections").Store(&paths); err != nil {
		return nil, fmt.Errorf("listing profiles: %w", err)
	}
	out := make([]*profile, 0, len(paths))
	for _, p := range paths {
		pr := &profile{path: p}
		if err := c.call(ctx, p, connIface+".GetSettings").Store(&pr.settings); err != nil {
			// Deleted meanwhile.
			continue
		}
		// One call for both properties: every D-Bus round trip costs
		// NetworkManager and the bus daemon more than the caller, most of
		// an apply's time on a slow node (about 1 ms each here, tens of
		// ms in the TCG guest).
		var props map[string]dbus.Variant
		if c.call(ctx, p, "org.freedesktop.DBus.Properties.GetAll", connIface).Store(&props) == nil {
			pr.filename, _ = props["Filename"].Value().(string)
			pr.unsaved, _ = props["Unsaved"].Value().(bool)
		}
		out = append(out, pr)
	}
	return out, nil
}

func (c *client) addProfile(ctx context.Context, s Settings, persist bool) (dbus.ObjectPath, error) {
	flags := uint32(flagInMemory | flagBlockAutoconnect)
	if persist {
		flags = flagToDisk | flagBlockAutoconnect
	}
	var path dbus.ObjectPath
	var result map[string]dbus.Variant
	err := c.call(ctx, settingsPath, settingsIface+".AddConnection2", map[string]map[string]dbus.Variant(s), flags, map[string]dbus.Variant{}).Store(&path, &result)
	return path, err
}

func (c *client) updateProfile(ctx context.Context, p dbus.ObjectPath, s Settings, persist bool) error {
	flags := uint32(flagInMemory | flagBlockAutoconnect)
	if persist {
		flags = flagToDisk | flagBlockAutoconnect
	}
	var result map[string]dbus.Variant
	return c.call(ctx, p, connIface+".Update2", map[string]map[string]dbus.Variant(s), flags, map[string]dbus.Variant{}).Store(&result)
}

func (c *client) deleteProfile(ctx context.Context, p dbus.ObjectPath) error {
	err := c.call(ctx, p, connIface+".Delete").Err
	if err == nil || isUnknownObject(err) {
		return nil
	}
	// NetworkManager may delete the profile itself while the call waits
	// for its authorization check (a port profile that goes with its
	// controller): the call then fails with "connection was deleted".
	// What is asked for holds once the object is gone.
	if isUnknownObject(c.call(ctx, p, connIface+".GetSettings").Err) {
		return nil
	}
	return err
}

// device is one NetworkManager device.
type device struct {
	path   dbus.ObjectPath
	name   string
	state  uint32
	active dbus.ObjectPath
	// profile is the settings connection of the active connection,
	// read with the device ("" when not active or not read).
	profile dbus.ObjectPath
	real    bool
	typ     uint32 // DeviceType
}

// objectManagerPath is where NetworkManager serves
// org.freedesktop.DBus.ObjectManager (libnm reads everything from it).
const objectManagerPath = dbus.ObjectPath("/org/freedesktop")

// devices reads every device, and the profile each one has active, in one
// call (GetManagedObjects) rather than one per device and one per active
// connection: each D-Bus round trip costs NetworkManager and the bus
// daemon more than the caller, and they were most of an apply's time on a
// slow node (about 1 ms each on the development machine, tens of ms in
// the TCG guest). Without an object manager it reads device by device.
func (c *client) devices(ctx context.Context) (map[string]*device, error) {
	var objs map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := c.conn.Object(nmDest, objectManagerPath).CallWithContext(ctx, "org.freedesktop.DBus.ObjectManager.GetManagedObjects", 0).Store(&objs); err != nil {
		return c.devicesOneByOne(ctx)
	}
	var paths []dbus.ObjectPath
	for p, ifaces := range objs {
		if _, ok := ifaces[deviceIface]; ok {
			paths = append(paths, p)
		}
	}
	// GetAllDevices' order (creation order), which keepDevice's choice
	// between two devices of one name follows.
	slices.SortFunc(paths, func(a, b dbus.ObjectPath) int { return cmpObjectPaths(a, b) })
	out := map[string]*device{}
	for _, p := range paths {
		d := deviceFrom(p, objs[p][deviceIface])
		if ac, ok := objs[d.active][acIface]; ok {
			d.profile, _ = ac["Connection"].Value().(dbus.ObjectPath)
		}
		if key, keep := keepDevice(out, d); keep {
			out[key] = d
		}
	}
	return out, nil
}

func (c *client) devicesOneByOne(ctx context.Context) (map[string]*device, error) {
	var paths []dbus.ObjectPath
	if err := c.call(ctx, nmPath, nmIface+".GetAllDevices").Store(&paths); err != nil {
		return nil, fmt.Errorf("listing devices: %w", err)
	}
	out := map[string]*device{}
	for _, p := range paths {
		var all map[string]dbus.Variant
		if err := c.call(ctx, p, "org.freedesktop.DBus.Properties.GetAll", deviceIface).Store(&all); err != nil {
			continue
		}
		d := deviceFrom(p, all)
		if d.active != "" && d.active != "/" {
			_ = c.prop(d.active, acIface+".Connection", &d.profile)
		}
		if key, keep := keepDevice(out, d); keep {
			out[key] = d
		}
	}
	return out, nil
}

// deviceFrom is a device of its Device interface's properties.
func deviceFrom(p dbus.ObjectPath, all map[string]dbus.Variant) *device {
	d := &device{path: p}
	d.name, _ = all["Interface"].Value().(string)
	d.state, _ = all["State"].Value().(uint32)
	d.active, _ = all["ActiveConnection"].Value().(dbus.ObjectPath)
	d.real, _ = all["Real"].Value().(bool)
	d.typ, _ = all["DeviceType"].Value().(uint32)
	return d
}

// cmpObjectPaths orders NetworkManager's object paths by their numeric
// last element (Devices/9 before Devices/10).
func cmpObjectPaths(a, b dbus.ObjectPath) int {
	na, errA := strconv.Atoi(path.Base(string(a)))
	nb, errB := strconv.Atoi(path.Base(string(b)))
	if errA != nil || errB != nil {
		return strings.Compare(string(a), string(b))
	}
	return na - nb
}

func (c *client) activate(ctx context.Context, p dbus.ObjectPath) (dbus.ObjectPath, error) {
	var ac dbus.ObjectPath
	err := c.call(ctx, nmPath, nmIface+".ActivateConnection", p, dbus.ObjectPath("/"), dbus.ObjectPath("/")).Store(&ac)
	return ac, err
}

func (c *client) deactivate(ctx context.Context, ac dbus.ObjectPath) error {
	err := c.call(ctx, nmPath, nmIface+".DeactivateConnection", ac).Err
	var de dbus.Error
	if errors.As(err, &de) && de.Name == "org.freedesktop.NetworkManager.ConnectionNotActive" || isUnknownObject(err) {
		return nil
	}
	return err
}

func (c *client) deleteDevice(ctx context.Context, d dbus.ObjectPath) error {
	return c.call(ctx, d, deviceIface+".Delete").Err
}

// activation reads an active connection's state and flags and its
// device's state.
func (c *client) activation(ac dbus.ObjectPath) (activation, error) {
	var a activation
	if err := c.prop(ac, acIface+".State", &a.conn); err != nil {
		return a, err
	}
	_ = c.prop(ac, acIface+".StateFlags", &a.flags)
	var devs []dbus.ObjectPath
	if err := c.prop(ac, acIface+".Devices", &devs); err == nil && len(devs) > 0 {
		_ = c.prop(devs[0], deviceIface+".State", &a.dev)
	}
	return a, nil
}

// waitActive waits until the activation of profile s is done as
// judgeActivation judges it.
func (c *client) waitActive(ctx context.Context, name string, ac dbus.ObjectPath, s Settings) error {
	mayPend4, mayPend6 := profileMayPend(s, "ipv4"), profileMayPend(s, "ipv6")
	var last string
	for {
		a, err := c.activation(ac)
		switch {
		case err != nil:
			last = err.Error()
			if isUnknownObject(errors.Unwrap(err)) || isUnknownObject(err) {
				return fmt.Errorf("activating %s: the activation went away (deactivated)", name)
			}
		default:
			switch judgeActivation(a, mayPend4, mayPend6) {
			case activationDone:
				return nil
			case activationFailed:
				return fmt.Errorf("activating %s: failed (connection state %d, device state %d)", name, a.conn, a.dev)
			}
			last = fmt.Sprintf("connection state %d, device state %d, flags %#x", a.conn, a.dev, a.flags)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("activating %s: %w (%s)", name, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func isUnknownObject(err error) bool {
	var de dbus.Error
	if errors.As(err, &de) {
		return de.Name == "org.freedesktop.DBus.Error.UnknownObject" || de.Name == "org.freedesktop.DBus.Error.UnknownMethod"
	}
	return false
}

// dnsConfiguration reads DnsManager.Configuration.
func (c *client) dnsConfiguration() ([]map[string]dbus.Variant, error) {
	var conf []map[string]dbus.Variant
	return conf, c.prop(dnsPath, dnsIface+".Configuration", &conf)
}

func (c *client) checkpointCreate(ctx context.Context, timeout time.Duration) (dbus.ObjectPath, error) {
	var cp dbus.ObjectPath
	secs := uint32((timeout + time.Second - 1) / time.Second)
	err := c.call(ctx, nmPath, nmIface+".CheckpointCreate", []dbus.ObjectPath{}, secs, uint32(cpDeleteNewConnections|cpDisconnectNewDevices)).Store(&cp)
	return cp, err
}

func (c *client) checkpointRollback(ctx context.Context, cp dbus.ObjectPath) (map[string]uint32, error) {
	var res map[string]uint32
	err := c.call(ctx, nmPath, nmIface+".CheckpointRollback", cp).Store(&res)
	return res, err
}

func (c *client) checkpointDestroy(ctx context.Context, cp dbus.ObjectPath) error {
	return c.call(ctx, nmPath, nmIface+".CheckpointDestroy", cp).Err
}

func (c *client) checkpoints() ([]dbus.ObjectPath, error) {
	var cps []dbus.ObjectPath
	return cps, c.prop(nmPath, nmIface+".Checkpoints", &cps)
}
