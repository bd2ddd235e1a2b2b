package telemetry

import (
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

// TestMain fails a passing run that leaves a goroutine behind: the batch
// processor's must be joined by Shutdown.
func TestMain(m *testing.M) { testmain.Run(m, nil, func(map[string]string) {}) }
