//go:build interop && !race

package interop

const raceEnabled = false
