package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/pkg/nmpolicy"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

const (
	captureField      = "spec.capture"
	desiredStateField = "spec.desiredState"
)

// maxResolutions bounds the re-validations ValidatePolicy spends on
// problems a template might cause (see the package comment); a policy
// that needs more has its remaining problems dropped.
const maxResolutions = 256

// ValidatePolicy checks the spec of a NodeNetworkConfigurationPolicy (v1
// and v1beta1 share it) as far as it can be known before a node renders it:
// every capture expression parses and refers only to defined captures,
// without cycles; every template of desiredState is well-formed and names
// a defined capture; desiredState decodes strictly and passes nmstate's
// validation without a current state (existence-dependent rules are the
// node's). Templated values are not validated (see the package comment).
// It returns every problem, captures first, then templates, then the state.
func ValidatePolicy(spec shared.NodeNetworkConfigurationPolicySpec) ErrorList {
	var errs ErrorList
	for _, e := range nmpolicy.CheckCaptures(spec.Capture) {
		field := captureField
		if e.Capture != "" {
			field += "." + e.Capture
		}
		errs = append(errs, Error{Field: field, Detail: positioned(e)})
	}
	if spec.DesiredState.IsZero() {
		return errs
	}
	doc, err := nmpolicy.DecodeDocument(spec.DesiredState.Raw)
	if err != nil {
		return append(errs, Error{Field: desiredStateField, Detail: err.Error()})
	}
	// knmstate's {{ node... }} templates (docs/extensions.md) are each
	// node's to fill; the capture language's checks do not see them.
	capDoc, nodeProblems := extension.CheckNodeTemplates(doc)
	for _, p := range nodeProblems {
		errs = append(errs, Error{Field: join(desiredStateField, p.Location), Detail: fmt.Sprintf("%q: %s", p.Template, p.Detail)})
	}
	refs, malformed := nmpolicy.References(capDoc)
	for _, e := range malformed {
		errs = append(errs, Error{Field: join(desiredStateField, e.Location), Detail: positioned(e)})
	}
	for _, r := range refs {
		if _, ok := spec.Capture[r.Capture]; !ok {
			errs = append(errs, Error{Field: join(desiredStateField, r.Location),
				Detail: fmt.Sprintf("%q refers to capture %q, which spec.capture does not define", r.Template, r.Capture)})
		}
	}
	return append(errs, validateState(spec.DesiredState.Raw, doc)...)
}

// positioned renders a language error without its location: kind,
// position, message, and the expression with a caret.
func positioned(e *nmpolicy.Error) string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	if e.Pos >= 0 && e.Expression != "" {
		fmt.Fprintf(&b, " at position %d", e.Pos)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Pos >= 0 && e.Expression != "" {
		// nmpolicy's own rendering of the expression and caret.
		full := e.Error()
		if i := strings.Index(full, "\n| "); i >= 0 {
			b.WriteString(full[i:])
		}
	}
	return b.String()
}

func join(field, loc string) string {
	if loc == "" {
		return field
	}
	if strings.HasPrefix(loc, "[") {
		return field + loc
	}
	return field + "." + loc
}

// validateState decodes and validates the desired state, templates aside.
func validateState(raw []byte, doc any) ErrorList {
	problems, deferred, decodeErr := check(raw)
	if decodeErr != nil {
		return stateErrors(decodeErr)
	}
	if len(problems) > 0 && len(deferred) > 0 {
		problems = persistent(doc, deferred, problems)
	}
	out := make(ErrorList, 0, len(problems))
	for _, p := range problems {
		out = append(out, Error{Field: join(desiredStateField, string(p.Path)), Detail: p.Detail})
	}
	return out
}

// check decodes raw with templates deferred and returns the validation
// problems templates cannot explain by their place (relevant) and the
// deferred values, or the decoding errors.
func check(raw []byte) (nmstate.ErrorList, []nmstate.Deferred, error) {
	st, deferred, err := nmstate.DecodeDeferred(raw, nmpolicy.IsTemplate)
	if err != nil {
		return nil, deferred, err
	}
	return relevant(nmstate.Validate(st, nil), deferred), deferred, nil
}

func stateErrors(err error) ErrorList {
	var list nmstate.ErrorList
	if !errors.As(err, &list) {
		return ErrorList{{Field: desiredStateField, Detail: err.Error()}}
	}
	out := make(ErrorList, 0, len(list))
	for _, e := range list {
		out = append(out, Error{Field: join(desiredStateField, string(e.Path)), Detail: e.Detail})
	}
	return out
}

// relevant drops the problems a deferred value explains by its place: at,
// below or above a deferred path, or anywhere in an entry (interface, route,
// rule) whose type or state is deferred: the other rules of an entry depend
// on those (an absent route needs no next hop).
func relevant(problems nmstate.ErrorList, deferred []nmstate.Deferred) nmstate.ErrorList {
	if len(deferred) == 0 || len(problems) == 0 {
		return problems
	}
	var scoped []nmstate.Path
	for _, d := range deferred {
		for _, key := range []string{".type", ".state"} {
			if entry, ok := strings.CutSuffix(string(d.Path), key); ok {
				scoped = append(scoped, nmstate.Path(entry))
			}
		}
	}
	var out nmstate.ErrorList
next:
	for _, e := range problems {
		for _, d := range deferred {
			if within(e.Path, d.Path) || within(d.Path, e.Path) {
				continue next
			}
		}
		for _, s := range scoped {
			if within(e.Path, s) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// within reports whether p is anc or below it.
func within(p, anc nmstate.Path) bool {
	if anc == "" || p == anc {
		return true
	}
	return strings.HasPrefix(string(p), string(anc)) && (p[len(anc)] == '.' || p[len(anc)] == '[')
}

// persistent keeps the problems that survive every resolution of one
// template (all its occurrences) to another value: each scalar of the
// document (other templates' texts included), each choice of an
// enumeration it stands for, 0, 1, true and false. A problem that one
// resolution removes may be the template's doing (a port list naming
// "{{ capture.nic.interfaces.0.name }}" while eth1 says `controller:
// bond0`; a templated route-type that may well be blackhole). Past
// maxResolutions it gives up and keeps nothing.
func persistent(doc any, deferred []nmstate.Deferred, problems nmstate.ErrorList) nmstate.ErrorList {
	sites, scalars := templateSites(doc)
	choices := map[string][]string{}
	for _, d := range deferred {
		choices[d.Value] = append(choices[d.Value], d.Choices...)
	}
	runs := 0
	for _, text := range sortedKeys(sites) {
		cands := slices.Clone(scalars)
		for _, c := range choices[text] {
			cands = append(cands, c)
		}
		cands = append(cands, int64(0), int64(1), true, false)
		tried := map[any]bool{text: true}
		for _, cand := range cands {
			if tried[cand] {
				continue
			}
			tried[cand] = true
			if runs++; runs > maxResolutions {
				return nil
			}
			for _, set := range sites[text] {
				set(cand)
			}
			raw, err := json.Marshal(doc)
			var again nmstate.ErrorList
			var decodeErr error
			if err == nil {
				again, _, decodeErr = check(raw)
			}
			for _, set := range sites[text] {
				set(text)
			}
			if err != nil || decodeErr != nil {
				continue // not a value this place can take
			}
			problems = intersect(problems, again)
			if len(problems) == 0 {
				return nil
			}
		}
	}
	return problems
}

func intersect(a, b nmstate.ErrorList) nmstate.ErrorList {
	var out nmstate.ErrorList
	for _, x := range a {
		for _, y := range b {
			if x.Path == y.Path && x.Detail == y.Detail {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// templateSites finds, in a generic document, the setters of every place
// holding each template text, and the distinct scalars of the document
// (templates included), in document order.
func templateSites(doc any) (map[string][]func(any), []any) {
	sites := map[string][]func(any){}
	seen := map[any]bool{}
	var scalars []any
	var walk func(v any, set func(any))
	walk = func(v any, set func(any)) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(t) {
				walk(t[k], func(x any) { t[k] = x })
			}
		case []any:
			for i := range t {
				walk(t[i], func(x any) { t[i] = x })
			}
		case nil:
		default:
			if !seen[t] {
				seen[t] = true
				scalars = append(scalars, t)
			}
			if s, ok := t.(string); ok && nmpolicy.IsTemplate(s) && set != nil {
				sites[s] = append(sites[s], set)
			}
		}
	}
	walk(doc, nil)
	return sites, scalars
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
