//go:build race

package telemetry

// raceEnabled: the race detector's instrumentation (checkptr among it)
// changes what escapes, so exact allocation counts are logged, not checked.
const raceEnabled = true
