package testmain

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer that the bridge's goroutines may write to
// while a test reads it (a log under test).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLog is a log writer that shows each line in the test's output with
// -v, and nothing otherwise.
type TestLog struct{ T *testing.T }

func (l TestLog) Write(p []byte) (int, error) {
	if testing.Verbose() {
		l.T.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Lines returns the lines of text that contain sub, joined by newlines
// (a log's or a /metrics scrape's lines of interest).
func Lines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
