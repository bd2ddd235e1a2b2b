// Command taskserver runs bridge/internal/taskchild on stdio: the
// tasks-capable child of the deploy tests (scripts/interop), which build
// it by path.
package main

import (
	"os"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
)

func main() {
	os.Exit(taskchild.Run(os.Stdin, os.Stdout, taskchild.Options{}))
}
