package stdiohost

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A child with wrong arguments prints its usage and exits at once, every
// time: the third quick exit in a row is reported once at error level with
// the stderr, and from then on the usage text, the exits and the restarts
// are not repeated above debug level. Durations name their unit.
func TestCrashLoopReportedOnce(t *testing.T) {
	var out lockedBuffer
	log := zerolog.New(&out).Level(zerolog.DebugLevel)
	w := &CrashWatch{Logger: log}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	starts := 0
	s := &Supervisor{
		Start: func() (*Host, error) {
			if starts++; starts == 7 {
				cancel()
			}
			return Start(helperCmd("usage"), Options{Logger: log, Watch: w})
		},
		InitialBackoff: 10 * time.Millisecond,
		MaxBackoff:     20 * time.Millisecond,
		Logger:         log,
		Watch:          w,
	}
	s.Run(ctx)
	var errors, after int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.Contains(line, `"level":"error"`):
			errors++
			if !strings.Contains(line, "usage: server --root DIR") {
				t.Errorf("the report lacks the child's stderr: %s", line)
			}
		case errors > 0 && !strings.Contains(line, `"level":"debug"`):
			after++ // said again above debug after the report
		}
		if strings.Contains(line, `"uptime":`) || strings.Contains(line, `"restart_in":`) {
			t.Errorf("a duration without its unit: %s", line)
		}
	}
	if errors != 1 {
		t.Errorf("%d error reports of the crash loop, want 1:\n%s", errors, out.String())
	}
	if after > 0 {
		t.Errorf("after the report, %d lines of output, exits or restarts above debug level:\n%s", after, out.String())
	}
	if !strings.Contains(out.String(), `"uptime_ms":`) || !strings.Contains(out.String(), `"restart_in_ms":`) {
		t.Errorf("no uptime_ms or restart_in_ms:\n%s", out.String())
	}
}

// A child that stays up ends the loop: the next loop is reported again.
func TestCrashWatchResets(t *testing.T) {
	var out lockedBuffer
	w := &CrashWatch{Logger: zerolog.New(&out)}
	for range 3 {
		w.exited(10*time.Millisecond, false, false, nil, "bad")
	}
	if !w.Quiet() {
		t.Fatal("three quick exits: not reported")
	}
	w.exited(5*time.Second, false, true, nil, "")
	if w.Quiet() {
		t.Fatal("a child that stayed up did not end the loop")
	}
	for range 3 {
		w.exited(10*time.Millisecond, true, false, nil, "") // stopped by the bridge: no failure
	}
	if w.Quiet() {
		t.Fatal("children the bridge stopped counted as a crash loop")
	}
	if n := strings.Count(out.String(), `"level":"error"`); n != 1 {
		t.Fatalf("%d reports, want 1", n)
	}
}

// A child that never answered failed to start however long it took to
// exit: a usage text printed after a slow start (npx, uvx, a loaded
// machine) is a crash loop all the same, and does not end one.
func TestSlowExitWithoutAnswerIsQuick(t *testing.T) {
	var out lockedBuffer
	w := &CrashWatch{Logger: zerolog.New(&out)}
	w.exited(10*time.Millisecond, false, false, nil, "usage")
	w.exited(3*time.Second, false, false, nil, "usage") // slow, silent: no end of the loop
	w.exited(2*time.Second, false, false, nil, "usage")
	if !w.Quiet() {
		t.Fatalf("three exits without an answer, two after more than %v: not reported:\n%s", quickExit, out.String())
	}
	w.exited(4*time.Second, false, false, nil, "usage")
	if !w.Quiet() {
		t.Fatal("a slow exit without an answer ended the loop")
	}
	if n := strings.Count(out.String(), `"level":"error"`); n != 1 {
		t.Fatalf("%d reports, want 1:\n%s", n, out.String())
	}
}

// A Throwaway process (an era probe) is no child: its exit is logged at
// debug level as a probe's, its stderr marked probe; once kept, its exit
// is a child's again.
func TestThrowawayExitNotAChild(t *testing.T) {
	for _, keep := range []bool{false, true} {
		var out lockedBuffer
		h, err := Start(helperCmd("usage"), Options{Logger: zerolog.New(&out).Level(zerolog.DebugLevel), Throwaway: true})
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			h.Keep()
		}
		<-h.Done()
		h.Close()
		log := out.String()
		child := strings.Contains(log, `"message":"child exited"`)
		if child != keep {
			t.Errorf("keep=%v: logged as a child's exit: %v\n%s", keep, child, log)
		}
		if !keep && (!strings.Contains(log, `"message":"probe process exited"`) || !strings.Contains(log, `"probe":true`)) {
			t.Errorf("a probe's exit or stderr not marked as the probe's:\n%s", log)
		}
	}
}
