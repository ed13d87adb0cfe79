package kernel

import (
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
)

// linkCache resolves interface names for one Execute from a single link
// dump instead of one RTM_GETLINK per operation.
//
// It is trusted only for what does not change while a link exists: that
// the name exists, its ifindex and its kind. Everything an operation may
// change, directly or as a side effect (up state, controller, MTU, MAC,
// alias, type options), is read with a fresh request (freshLink) by the
// few operations that compare against it.
//
// The cache follows the executor's own changes: a created link (and a
// veth's peer) becomes "pending", resolved on first use; a deleted link
// leaves it, and the links the kernel may have removed with it (its veth
// peer, links stacked on it) become pending, so they are asked for again.
type linkCache struct {
	b *Backend
	// byName holds the resolved links; loaded is false until the first
	// dump, after which a name neither here nor pending does not exist.
	byName map[string]netlink.Link
	loaded bool
	// pending names may exist but are not resolved yet.
	pending map[string]bool
}

// pendingDumpThreshold is the number of pending names above which a miss
// re-reads every link in one dump rather than asking for the one name: a
// plan that creates many links before using them resolves them all at
// once.
const pendingDumpThreshold = 8

// lookup finds a link; ok is false when it does not exist.
func (c *linkCache) lookup(name string) (netlink.Link, bool, error) {
	if l, ok := c.byName[name]; ok {
		return l, true, nil
	}
	if c.loaded && !c.pending[name] {
		return nil, false, nil
	}
	if c.loaded && len(c.pending) <= pendingDumpThreshold {
		return c.fresh(name)
	}
	if err := c.load(); err != nil {
		return nil, false, err
	}
	l, ok := c.byName[name]
	return l, ok, nil
}

// fresh reads one link from the kernel and records the answer.
func (c *linkCache) fresh(name string) (netlink.Link, bool, error) {
	l, ok, err := c.b.linkByName(name)
	if err != nil {
		return nil, false, err
	}
	delete(c.pending, name)
	if ok {
		c.byName[name] = l
	} else {
		delete(c.byName, name)
	}
	return l, ok, nil
}

// load replaces the cache with one dump of every link.
func (c *linkCache) load() error {
	links, err := c.b.dumpLinkObjects()
	if err != nil {
		return classify(err)
	}
	c.byName = make(map[string]netlink.Link, len(links))
	for _, l := range links {
		c.byName[l.Attrs().Name] = l
	}
	c.loaded = true
	c.pending = nil
	return nil
}

// created records that name (and, for a veth, its peer) may exist now.
func (c *linkCache) created(names ...string) {
	if c.pending == nil {
		c.pending = map[string]bool{}
	}
	for _, n := range names {
		if n != "" {
			delete(c.byName, n)
			c.pending[n] = true
		}
	}
}

// added records a link this executor created. Its index is known when the
// library read it back after the create; otherwise it is pending.
func (c *linkCache) added(l netlink.Link) {
	a := l.Attrs()
	if a.Index == 0 || !c.loaded {
		c.created(a.Name)
		return
	}
	delete(c.pending, a.Name)
	c.byName[a.Name] = l
}

// deleted records that l is gone. Its veth peer and the links stacked on
// it (vlan, mac/ipvlan, vxlan over it: the kernel removes them with their
// lower device), and in turn the links stacked on those, may have gone
// with it: they become pending and are asked for again when used.
func (c *linkCache) deleted(l netlink.Link) {
	a := l.Attrs()
	delete(c.byName, a.Name)
	gone := []netlink.Link{l}
	for len(gone) > 0 {
		g := gone[0].Attrs()
		gone = gone[1:]
		for name, other := range c.byName {
			oa := other.Attrs()
			vx, _ := other.(*netlink.Vxlan)
			if oa.ParentIndex == g.Index || (g.ParentIndex != 0 && oa.Index == g.ParentIndex) ||
				(vx != nil && vx.VtepDevIndex == g.Index) {
				c.created(name)
				gone = append(gone, other)
			}
		}
	}
}

// mustLink finds a link that has to exist.
func (c *linkCache) mustLink(name string) (netlink.Link, error) {
	l, ok, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, missingLink(name)
	}
	return l, nil
}

// freshLink reads a link that has to exist from the kernel, for the
// attributes the cache does not vouch for.
func (c *linkCache) freshLink(name string) (netlink.Link, error) {
	if _, ok, err := c.lookup(name); err != nil {
		return nil, err
	} else if !ok {
		return nil, missingLink(name)
	}
	l, ok, err := c.fresh(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, missingLink(name)
	}
	return l, nil
}

func (c *linkCache) ifindex(name string) (int, error) {
	l, err := c.mustLink(name)
	if err != nil {
		return 0, err
	}
	return l.Attrs().Index, nil
}

func missingLink(name string) error {
	return &kernelError{kind: nmstate.Dependency, msg: "interface " + name + " does not exist"}
}
