package nmstate

// Team is the nmstate 1.x `team` section; 2.x removed the type, knmstate
// parses it so old files get a clear NotSupported error from validation
// instead of an unknown-key error.
type Team struct {
	Port   []TeamPort  `nms:"port,alias=ports"`
	Runner *TeamRunner `nms:"runner"`
}

// TeamPort is one team port.
type TeamPort struct {
	Name string `nms:"name,required"`
}

// TeamRunner selects the teamd runner.
type TeamRunner struct {
	Name *TeamRunnerName `nms:"name"`
}

// TeamRunnerName is the teamd runner.
type TeamRunnerName string

func (TeamRunnerName) enumSpec() enumSpec {
	return enumSpec{values: []string{"broadcast", "roundrobin", "activebackup", "loadbalance", "lacp", "random"}}
}
