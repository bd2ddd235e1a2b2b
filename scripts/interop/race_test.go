//go:build interop && race

package interop

// raceEnabled: this test binary runs under the race detector, so mcp-bridge
// is built with -race too and any DATA RACE it reports fails the test.
const raceEnabled = true
