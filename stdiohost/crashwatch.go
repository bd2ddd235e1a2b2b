package stdiohost

import (
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// quickExit is how soon after its start a child's exit counts as a failure
// to start (wrong arguments, a missing module) rather than a crash. A child
// that never wrote a message on stdout failed to start however long it took:
// on a loaded machine, or behind npx or uvx, printing a usage text and
// exiting can take longer than this.
const quickExit = time.Second

// quickExits is how many quick exits in a row make a crash loop.
const quickExits = 3

// stderrTail bounds the stderr a Host keeps for a crash-loop report.
const stderrTail = 4 << 10

// A CrashWatch notices a command whose processes keep exiting right after
// they start: a server started with wrong arguments prints its usage and
// exits, every time. The third such exit in a row is reported once, at
// error level, with what the last one wrote to stderr; after that the
// children's stderr, their exits and the restarts are logged at debug
// level only, until a child stays up. Share one among every Host of a
// command (Options.Watch) and its Supervisor (Supervisor.Watch).
type CrashWatch struct {
	// Logger receives the report. The zero value discards it.
	Logger zerolog.Logger

	mu       sync.Mutex
	quick    int  // quick exits in a row
	reported bool // the loop was reported: stay quiet until it ends
}

// Quiet reports whether a crash loop has been reported and not ended.
func (w *CrashWatch) Quiet() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reported
}

// exited records one child's exit; stopped says the bridge stopped it,
// answered that it wrote at least one message on stdout.
func (w *CrashWatch) exited(uptime time.Duration, stopped, answered bool, err error, tail string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	if stopped || (answered && uptime >= quickExit) {
		w.quick, w.reported = 0, false
		w.mu.Unlock()
		return
	}
	w.quick++
	report := w.quick == quickExits && !w.reported
	if report {
		w.reported = true
	}
	w.mu.Unlock()
	if report {
		ev := w.Logger.Error()
		if err != nil {
			ev = ev.Err(err)
		}
		ev.Int("exits", quickExits).Int64("uptime_ms", uptime.Milliseconds()).Str("stderr", strings.TrimSpace(tail)).
			Msg("MCP server exits right after it starts (check its command and arguments); restarting with backoff, its output is no longer repeated")
	}
}

// tail keeps the last stderrTail bytes of a child's stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) add(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(append(t.buf, line...), '\n')
	if n := len(t.buf) - stderrTail; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
