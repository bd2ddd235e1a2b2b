package remote

import (
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m, nil, func(map[string]string) {}) }
