package serve

import (
	"os"
	"os/exec"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/taskchild"
)

// tasksChild returns a command that runs this test binary as the stdio MCP
// server with tasks in both generations of bridge/internal/taskchild.
func tasksChild() func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), testChildEnv+"=tasks")
		return cmd
	}
}

// init runs the tasks child when this binary was started as one: before
// TestMain, so that the package's other child modes (testchild_test.go)
// need not know of it.
func init() {
	if os.Getenv(testChildEnv) == "tasks" {
		os.Exit(taskchild.Run(os.Stdin, os.Stdout, taskchild.Options{}))
	}
}
