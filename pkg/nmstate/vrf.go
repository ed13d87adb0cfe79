package nmstate

// VRF is the `vrf` section.
type VRF struct {
	Port         []string `nms:"port,alias=ports"`
	RouteTableID *uint32  `nms:"route-table-id"`
}
