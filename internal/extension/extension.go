package extension

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/knmstate/knmstate/pkg/probe"
)

// Prefix is the prefix of every knmstate annotation.
const Prefix = "knmstate.io/"

// The policy annotations.
const (
	// DryRunAnnotation ("true" or "false"): each matching node computes the
	// plan and reports it in its enactment; nothing is applied.
	DryRunAnnotation = Prefix + "dry-run"
	// ProbesAnnotation selects the probes run after this policy's applies,
	// their timeouts and targets (see ParseProbes).
	ProbesAnnotation = Prefix + "probes"
	// EnforceAnnotation ("true" or "false"): a node whose live state stops
	// showing the Available policy applies it again, with back-off.
	EnforceAnnotation = Prefix + "enforce"
	// RevertOnDeleteAnnotation ("true" or "false"): deleting the policy
	// reverts, on every node, what its applies changed there.
	RevertOnDeleteAnnotation = Prefix + "revert-on-delete"
	// AfterAnnotation names policies (comma-separated) that must be
	// Available on a node before this one is applied there.
	AfterAnnotation = Prefix + "after"
	// TestPauseAnnotation (a Go duration, at most MaxTestPause) is for
	// fault tests only: after each apply of the policy, before the probes,
	// the handler waits this long with the change applied and not yet
	// committed, and logs that it does, so a test can kill, cut off or
	// restart something at that moment (docs/reliability.md). A policy
	// without it is applied exactly as before.
	TestPauseAnnotation = Prefix + "test-pause-before-probes"
)

// MaxTestPause bounds TestPauseAnnotation: the pause counts against the
// checkpoint's automatic rollback deadline.
const MaxTestPause = time.Minute

// RevertFinalizer holds a policy with RevertOnDeleteAnnotation until every
// node has reverted it or said why it could not (the controller adds and
// removes it).
const RevertFinalizer = Prefix + "revert-on-delete"

// WaitingCondition is the enactment condition that is True while a node
// does not apply a policy because a policy it is after (AfterAnnotation) is
// not Available there; the reason says whether that one is still on its
// way or failed.
const (
	WaitingCondition    = "Waiting"
	WaitingReason       = "AfterPolicy"
	WaitingFailedReason = "AfterPolicyFailed"
)

// RevertedCondition is the enactment condition a node reports once it has
// dealt with a deleted policy's revert: True (reason Reverted) or False
// (reason RevertFailed, the message says why).
const (
	RevertedCondition  = "Reverted"
	RevertedReason     = "Reverted"
	RevertFailedReason = "RevertFailed"
)

// known are the annotations a policy may carry in Prefix; any other name
// there is a typo that would silently do nothing, so it is refused.
var known = []string{AfterAnnotation, DryRunAnnotation, EnforceAnnotation, PoolAnnotation, PoolAddressesAnnotation, ProbesAnnotation, RevertOnDeleteAnnotation, TestPauseAnnotation}

// DryRunCondition is the condition type (on enactments and policies) that
// is True while a dry run is reported; DryRunReason its reason.
const (
	DryRunCondition = "DryRun"
	DryRunReason    = "NothingApplied"
)

// DriftedCondition is the condition type (on enactments and policies) that
// is True while a node no longer shows an Available policy; DriftedReason
// its reason.
const (
	DriftedCondition = "Drifted"
	DriftedReason    = "StateDiffers"
)

// MaxProbeTimeout bounds a probe timeout: the checkpoint's automatic
// rollback deadline is twice the sum of the timeouts, and a node must not
// sit for hours on an unconfirmed change.
const MaxProbeTimeout = 10 * time.Minute

// Settings are a policy's knmstate annotations, parsed.
type Settings struct {
	// After are the policies that must be Available on a node first.
	After          []string
	DryRun         bool
	Enforce        bool
	RevertOnDelete bool
	Probes         Probes
	// Pool is the address pool, nil without one.
	Pool *Pool
}

// Probes are a policy's probe settings; the zero value changes nothing.
type Probes struct {
	// Off names the probes not run after this policy's applies.
	Off map[string]bool
	// Timeouts replace the handler's timeout of a probe, by name.
	Timeouts map[string]time.Duration
	// DNSHost, when set, is the name the DNS probe looks up.
	DNSHost string
	// PingTarget, when valid, is pinged instead of the default gateway.
	PingTarget netip.Addr
	// TestPause is TestPauseAnnotation: the wait between apply and probes.
	TestPause time.Duration
}

// probeNames are the probes a policy can name, in upstream's order.
var probeNames = []string{probe.PingName, probe.DNSName, probe.APIServerName, probe.NodeReadinessName}

func annotationPath(name string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(name)
}

// Parse reads a policy's annotations. Every problem is returned, each
// naming its annotation; annotations outside Prefix are not looked at.
func Parse(annotations map[string]string) (Settings, field.ErrorList) {
	var s Settings
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(annotations)) {
		if !strings.HasPrefix(name, Prefix) || slices.Contains(known, name) {
			continue
		}
		errs = append(errs, field.NotSupported(annotationPath(name), name, known))
	}
	boolean := func(name string, to *bool) {
		v, ok := annotations[name]
		switch {
		case !ok, v == "false":
		case v == "true":
			*to = true
		default:
			errs = append(errs, field.Invalid(annotationPath(name), v, `must be "true" or "false"`))
		}
	}
	boolean(DryRunAnnotation, &s.DryRun)
	boolean(EnforceAnnotation, &s.Enforce)
	boolean(RevertOnDeleteAnnotation, &s.RevertOnDelete)
	if v, ok := annotations[AfterAnnotation]; ok {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				errs = append(errs, field.Invalid(annotationPath(AfterAnnotation), v, "expected policy names separated by commas"))
			case len(validation.IsDNS1123Subdomain(name)) > 0:
				errs = append(errs, field.Invalid(annotationPath(AfterAnnotation), v, fmt.Sprintf("%q is not a policy name (lowercase letters, digits, '-' and '.')", name)))
			case slices.Contains(s.After, name):
			default:
				s.After = append(s.After, name)
			}
		}
	}
	pool, perrs := parsePool(annotations)
	s.Pool = pool
	errs = append(errs, perrs...)
	if v, ok := annotations[ProbesAnnotation]; ok {
		p, perrs := ParseProbes(annotationPath(ProbesAnnotation), v)
		s.Probes = p
		errs = append(errs, perrs...)
	}
	if v, ok := annotations[TestPauseAnnotation]; ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(annotationPath(TestPauseAnnotation), v, "expected a Go duration such as 3s"))
		case d <= 0 || d > MaxTestPause:
			errs = append(errs, field.Invalid(annotationPath(TestPauseAnnotation), v, fmt.Sprintf("must be more than 0 and at most %v", MaxTestPause)))
		default:
			s.Probes.TestPause = d
		}
	}
	return s, errs
}

// ParseProbes reads the value of ProbesAnnotation: comma-separated
// settings, each one of
//
//	NAME=off | NAME=on         turn probe NAME off (or leave it on)
//	NAME.timeout=DURATION      how long probe NAME may take (Go duration, > 0, at most MaxProbeTimeout)
//	dns.host=NAME              the name the DNS probe looks up
//	ping.target=IP             the address pinged instead of the default gateway
//
// where NAME is ping, dns, api-server or node-readiness. A setting may
// appear once.
func ParseProbes(path *field.Path, value string) (Probes, field.ErrorList) {
	var p Probes
	var errs field.ErrorList
	bad := func(item, why string) { errs = append(errs, field.Invalid(path, item, why)) }
	seen := map[string]bool{}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" || val == "" {
			bad(item, "expected SETTING=VALUE")
			continue
		}
		if seen[key] {
			bad(item, fmt.Sprintf("%s is set more than once", key))
			continue
		}
		seen[key] = true
		name, attr, _ := strings.Cut(key, ".")
		if !slices.Contains(probeNames, name) {
			bad(item, fmt.Sprintf("unknown probe %q: one of %s", name, strings.Join(probeNames, ", ")))
			continue
		}
		switch {
		case attr == "":
			switch val {
			case "off":
				if p.Off == nil {
					p.Off = map[string]bool{}
				}
				p.Off[name] = true
			case "on":
			default:
				bad(item, fmt.Sprintf(`%s must be "on" or "off"`, name))
			}
		case attr == "timeout":
			d, err := time.ParseDuration(val)
			switch {
			case err != nil:
				bad(item, fmt.Sprintf("%s: not a duration (e.g. 30s, 2m)", key))
			case d <= 0 || d > MaxProbeTimeout:
				bad(item, fmt.Sprintf("%s: must be more than 0s and at most %v", key, MaxProbeTimeout))
			default:
				if p.Timeouts == nil {
					p.Timeouts = map[string]time.Duration{}
				}
				p.Timeouts[name] = d
			}
		case key == "dns.host":
			if strings.ContainsAny(val, " \t/") || len(val) > 253 {
				bad(item, "dns.host: not a host name")
				continue
			}
			p.DNSHost = val
		case key == "ping.target":
			a, err := netip.ParseAddr(val)
			if err != nil || a.IsUnspecified() {
				bad(item, "ping.target: not an IP address")
				continue
			}
			p.PingTarget = a
		default:
			bad(item, fmt.Sprintf("unknown setting %q of probe %s: %s", attr, name, settingsOf(name)))
		}
	}
	return p, errs
}

// settingsOf lists what can be set of a probe, for an error message.
func settingsOf(name string) string {
	s := []string{name + "=on|off", name + ".timeout"}
	switch name {
	case probe.DNSName:
		s = append(s, "dns.host")
	case probe.PingName:
		s = append(s, "ping.target")
	}
	return strings.Join(s, ", ")
}

// Changed reports whether two annotation maps differ in any Prefix
// annotation: such a change is not a new generation, yet it changes what
// the handler and the controller do with the policy.
func Changed(old, new map[string]string) bool {
	for _, m := range []map[string]string{old, new} {
		for k := range m {
			if !strings.HasPrefix(k, Prefix) {
				continue
			}
			ov, oldHas := old[k]
			nv, newHas := new[k]
			if oldHas != newHas || ov != nv {
				return true
			}
		}
	}
	return false
}

// Options applies the probe settings to the handler's probe options: the
// timeouts, DNS name and ping target replaced where the policy sets them.
func (p Probes) Options(o probe.Options) probe.Options {
	set := func(d *time.Duration, name string) {
		if v, ok := p.Timeouts[name]; ok {
			*d = v
		}
	}
	set(&o.PingTimeout, probe.PingName)
	set(&o.DNSTimeout, probe.DNSName)
	set(&o.APITimeout, probe.APIServerName)
	set(&o.NodeTimeout, probe.NodeReadinessName)
	if p.DNSHost != "" {
		o.DNSHost = p.DNSHost
	}
	if p.PingTarget.IsValid() {
		o.PingTarget = p.PingTarget
	}
	return o
}

// Select drops the probes the policy turns off.
func (p Probes) Select(all []probe.Probe) []probe.Probe {
	out := make([]probe.Probe, 0, len(all))
	for _, pr := range all {
		if !p.Off[pr.Name] {
			out = append(out, pr)
		}
	}
	return out
}
