package child

import (
	"strings"
	"testing"
)

// A client's answer to a child's request names its task (related-task)
// as the client knows it; the child gets its own id, and an id of no
// task of this child process (bare, or of the process before) as "".
func TestTaskIDsInAnswersToTheChild(t *testing.T) {
	c := &Conn{}
	c.tasks.Reset("r1")
	old := c.tasks.IDPrefix()
	c.tasks.Reset("r1") // the child restarted
	p := c.tasks.IDPrefix()
	answer := func(id string) string {
		return `{"jsonrpc":"2.0","id":4,"result":{"action":"accept","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}}`
	}
	if !strings.HasPrefix(p, "r1.") || p == old {
		t.Fatalf("prefixes %q then %q: want r1.<epoch>., a new epoch per child", old, p)
	}
	for _, tc := range []struct{ id, want string }{{p + "task-1", "task-1"}, {old + "task-1", ""}, {"task-1", ""}} {
		if got := string(c.InternalAnswer([]byte(answer(tc.id)))); got != answer(tc.want) {
			t.Errorf("InternalAnswer(%s) = %s, want %s", tc.id, got, answer(tc.want))
		}
	}
}
