//go:build race

package serve

// raceEnabled: the race detector makes frames, and so goroutine stacks,
// larger; byte counts are logged but not bounded under it.
const raceEnabled = true
