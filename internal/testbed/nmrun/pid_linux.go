package nmrun

// PID is NetworkManager's process id, 0 when it is not running. The shell
// nmrun starts execs NetworkManager, so its child is NetworkManager
// itself: benchmarks read its CPU time from /proc/PID/stat.
func (in *Instance) PID() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.nm == nil || in.nm.Process == nil {
		return 0
	}
	return in.nm.Process.Pid
}
