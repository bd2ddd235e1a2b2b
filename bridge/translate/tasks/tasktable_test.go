package tasks

import (
	"fmt"
	"testing"
	"time"
)

// The table's bounds: a principal at its share loses its own oldest task
// (not another's), expired bindings go, and a reset forgets all.
func TestTableBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	tt := &Table[struct{}]{Now: func() time.Time { return now }}
	tt.Bind("a-first", "a", time.Minute)
	tt.Bind("b-1", "b", time.Minute)
	for i := range MaxTasksPer - 1 {
		tt.Bind(fmt.Sprintf("a-%d", i), "a", time.Hour)
	}
	tt.Bind("a-more", "a", time.Hour) // a at its share: a-first (soonest) goes
	if tt.Owns("a", "a-first") || !tt.Owns("a", "a-more") || !tt.Owns("b", "b-1") {
		t.Error("eviction at a principal's share took the wrong task")
	}
	if tt.Owns("b", "a-more") || tt.Owns("a", "b-1") {
		t.Error("a task owned by another principal")
	}
	now = now.Add(2 * time.Minute)
	if tt.Owns("b", "b-1") {
		t.Error("expired binding still owned")
	}
	tt.Bind("x", "c", 0) // no ttl: the default
	now = now.Add(DefaultTaskTTL - time.Second)
	if !tt.Owns("c", "x") {
		t.Error("default ttl too short")
	}
	tt.Bind("b-1", "b", time.Minute)
	tt.Bind("b-1", "c", time.Minute) // the id handed out again: the new creator owns it
	if tt.Owns("b", "b-1") || !tt.Owns("c", "b-1") {
		t.Error("a re-issued id kept its old owner")
	}
	tt.Reset("")
	if tt.Size() != 0 || tt.Owns("c", "x") {
		t.Error("reset kept tasks")
	}
	for i := range MaxTasks + 10 {
		tt.Bind(fmt.Sprintf("t-%d", i), fmt.Sprintf("p-%d", i%20), time.Hour)
	}
	if n := tt.Size(); n > MaxTasks {
		t.Errorf("table holds %d, cap %d", n, MaxTasks)
	}
}
