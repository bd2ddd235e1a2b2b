package bridge

import (
	"strings"
	"testing"
)

// TestTasksMachineLivesOnce: which tasks request takes which path across
// the eras, and the bridge's own requests where one era's step is two of
// the other's (a tasks/get plus tasks/result, a tasks/cancel read back,
// tasks/result polled), are bridge/translate/tasks' alone. Both faces use
// it, and neither names tasks/result — the method those steps turn on —
// so a copy of the machine brought back into a face fails here (nor may
// bridge/remote, connect's remote side, which need not use the machine).
func TestTasksMachineLivesOnce(t *testing.T) {
	for _, dir := range []string{"serve", "child", "connect", "remote"} {
		uses := false
		for _, g := range sourceFiles(t, dir) {
			f, src := g.path, g.src
			if strings.Contains(string(src), `"tasks/result"`) {
				t.Errorf("%s names tasks/result: the tasks machine lives in bridge/translate/tasks", f)
			}
			uses = uses || strings.Contains(string(src), `"`+module+`/bridge/translate/tasks"`)
		}
		if !uses && dir != "remote" {
			t.Errorf("bridge/%s does not use bridge/translate/tasks", dir)
		}
	}
}
