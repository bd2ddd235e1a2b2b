package ratelog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestOneLinePerPeriodAndKind(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	var k Kinds
	for range 1000 {
		k.Warn(log, "a").Msg("bad a")
		k.Warn(log, "b").Msg("bad b")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "bad a") || !strings.Contains(lines[1], "bad b") {
		t.Fatalf("2000 warnings of two kinds within one period logged as:\n%s", buf.String())
	}
	// The next line of a kind says how many were held back.
	l := k.m["a"]
	l.next = l.next.Add(-2 * Period)
	k.Warn(log, "a").Msg("bad a")
	if !strings.Contains(buf.String(), `"suppressed":999`) {
		t.Fatalf("no suppressed count: %s", buf.String())
	}
}

func TestBelowLevelIsNotCounted(t *testing.T) {
	log := zerolog.New(&bytes.Buffer{}).Level(zerolog.ErrorLevel)
	var l Limiter
	if e := l.Event(&log, zerolog.WarnLevel); e != nil {
		t.Fatal("an event below the logger's level")
	}
	if l.held != 0 {
		t.Fatal("a line that would not be written was counted")
	}
}

func TestNilKindsLimitsNothing(t *testing.T) {
	var buf bytes.Buffer
	var k *Kinds
	for range 3 {
		k.Warn(zerolog.New(&buf), "a").Msg("x")
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines, want 3", n)
	}
}
