//go:build !linux

package telemetry

// readProcess: the process metrics are read from /proc, which only Linux
// has; elsewhere /metrics has none of them rather than made-up ones.
func readProcess(*procCache) (procStat, bool) { return procStat{}, false }
