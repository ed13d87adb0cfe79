package nmstate

import "reflect"

// SchemaVersion is the nmstate release whose YAML schema this package
// follows: every key of that release decodes, and the keys and values it
// added over the engine's earlier base (2.2.38) that the engine does not
// implement yet are refused by name and version (newerKeys, newerValues)
// instead of as unknown. docs/schema.md lists them.
const SchemaVersion = "2.2.62"

// newerKey names a key of one struct type of the schema.
type newerKey struct {
	t   reflect.Type
	key string
}

// newerKeys are keys nmstate added after 2.2.38 that this engine does not
// implement yet, with the release that added them. A key here is refused
// with kind NotSupported, naming the release, so a user can tell a newer
// document from a typo ("unknown field").
var newerKeys = map[newerKey]string{
	{reflect.TypeFor[Interface](), "pci-address"}:                    "2.2.47",
	{reflect.TypeFor[Interface](), "alt-names"}:                      "2.2.51",
	{reflect.TypeFor[Interface](), "ip-tunnel"}:                      "2.2.59",
	{reflect.TypeFor[Ethtool](), "fec"}:                              "2.2.43",
	{reflect.TypeFor[BondOptions](), "lacp_active"}:                  "2.2.47",
	{reflect.TypeFor[BondOptions](), "ns_ip6_target"}:                "2.2.47",
	{reflect.TypeFor[OVSBridgeOptions](), "allow-extra-patch-ports"}: "2.2.45",
	{reflect.TypeFor[OVSBridgeOptions](), "allow-extra-ports"}:       "2.2.60",
	{reflect.TypeFor[LinuxBridgeOptions](), "allow-extra-ports"}:     "2.2.60",
	{reflect.TypeFor[Libreswan](), "nm-auto-defaults"}:               "2.2.56",
	{reflect.TypeFor[Libreswan](), "rightca"}:                        "2.2.56",
	{reflect.TypeFor[Libreswan](), "leftprotoport"}:                  "2.2.57",
	{reflect.TypeFor[Libreswan](), "rightprotoport"}:                 "2.2.57",
}

// newerValues are enumeration values added after 2.2.38 that this engine
// does not implement yet, per enumeration type.
var newerValues = map[reflect.Type]map[string]string{
	reflect.TypeFor[InterfaceType](): {"ip-tunnel": "2.2.59"},
	reflect.TypeFor[Identifier]():    {"pci-address": "2.2.47"},
}

// notYet is the detail of an error for a newer key or value.
func notYet(version string) string {
	return "not supported by knmstate yet (added in nmstate " + version + ")"
}
