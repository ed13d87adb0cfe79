// Package nmstate is knmstate's state model: the nmstate document schema as
// Go types, strict decoding with path-qualified errors, canonical encoding,
// and validation. Merge, verify, plan and revert build on these types.
//
// It owns values only: no syscalls, no context, no goroutines, no logging,
// no clock, no Kubernetes or netlink types. It builds and tests anywhere.
//
// # Types
//
// State is one document (desired or reported). Interface holds the base keys
// and one pointer per type-specific section (LinkAggregation, LinuxBridge,
// OVSBridge, VLAN, ...); the `bridge` key lands in LinuxBridge or OVSBridge
// according to Type. IPConfig serves both `ipv4` and `ipv6` (family-only
// keys are documented on the fields and rejected by Validate in the wrong
// family).
//
// Unset versus zero: every optional scalar is a pointer (nil = not given =
// "do not change"; statetest.Ptr builds them). Lists and maps are nil when
// not given and non-nil when given, so `address: []` (remove all) differs
// from no `address` (keep). Interface.Type and Interface.State are plain
// strings where "" means not given (EffectiveState fills in up). netip.Addr
// and netip.Prefix hold addresses; for the few route/rule keys where
// upstream gives meaning to an empty string (`ip-from: ""` in an absent rule)
// a non-nil pointer to the zero netip value means "given as empty".
// Integers keep upstream's widths (mtu uint64, vlan id uint16, metric
// int64, ...). Enumerations are string types (BondMode, VLANProto, ...) that
// always hold the canonical spelling. MAC holds upper-case text. Hex16/Hex32
// are integers printed as hex strings (pkey, fwmark, fwmask).
//
// After Decode, interfaces with state absent carry only name, type and state
// (as upstream), route destinations and rule prefixes are masked, and
// aliases (`ports`, `accept-all-mac`, `valid-lft`, `n_rxq`, `group-fwd-mask`,
// `suppress_prefixlength`, numeric bond modes, ...) are already resolved to
// their canonical field. Interface order is the document's order.
//
// # Decoding
//
// Decode(data) takes YAML or JSON. It walks a node tree, built by fast
// parsers for plain documents and by yaml.v3 (JSON: encoding/json's
// tokenizer) for everything else, with the same nodes, lines and errors
// either way, and fills the types by reflection over their `nms:"key,alias=..,required,types=.."`
// tags. A node walk rather than yaml.Unmarshal because strictness and
// upstream's leniency both need the raw scalar text: integers given as
// strings or hex, yes/no/on/off booleans, numeric enum aliases, and an
// error for every offending key with its path and source line, all
// collected in one pass. One table of tags drives decoder and encoder, so
// adding a key is one struct field. DecodeNode decodes an already parsed
// node (e.g. spec.desiredState of an NNCP).
//
// # Errors
//
// Every problem is an *Error{Kind, Path, Detail, Line, Column}; Error()
// prints "path: detail", e.g.
// `interfaces[1].link-aggregation.mode: "balance-xx" is not one of ...`.
// Paths use list indexes (`interfaces[1]`), as in the source document.
// Decode and Validate return an ErrorList holding all of them; KindOf(err)
// and errors.Is(err, &Error{Kind: k}) give the kind for retry decisions
// (InvalidArgument, NotSupported, Dependency, Verification, Backend,
// Permission, Bug).
//
// # Encoding
//
// EncodeYAML / EncodeJSON (and State.MarshalJSON) print the canonical form:
// unset fields omitted; top level in nmstate's show order (hostname,
// dns-resolver, route-rules, routes, interfaces, ovs-db, ovn, description);
// interfaces with name, type, state first; addresses with ip,
// prefix-length first; OVS ports with name first; every other mapping
// sorted by key (upstream prints through a sorted JSON map). Decode of the
// output gives an equal value, and encoding is a fixed point. Strings that
// YAML 1.1 readers would take for booleans (yes, on, ...) are quoted.
// Query-only opaque values (LLDP neighbors) are JSON-shaped trees with
// json.Number leaves, so they round-trip exactly. Tree(v) gives the same
// canonical form of any schema value as such a generic tree, for generic
// subset comparison (verify) and diffs. Clone deep-copies a State or
// Interface.
//
// # Validation
//
// Validate(desired, current) checks ranges, required fields, families,
// option whitelists and references between interfaces, routes, rules and
// DNS. current == nil means the current state is unknown (webhook,
// `nmstatectl validate FILE`): existence-dependent checks (new bond needs a
// mode, port must exist, ...) are skipped. A non-nil current enables them;
// an empty current means nothing exists yet.
//
// Test fixtures: package statetest (statetest.Bond("bond0",
// statetest.Mode("802.3ad"), statetest.Ports("eth1", "eth2"))).
package nmstate
