package stdiohost

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

// The test binary doubles as the child process: STDIOHOST_HELPER selects a
// behaviour (the os/exec tests' helper-process pattern).
func TestMain(m *testing.M) {
	if mode := os.Getenv("STDIOHOST_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	goleak.VerifyTestMain(m)
}

func helperMain(mode string) int {
	switch mode {
	case "echo": // echo each line; exit at EOF
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(sc.Text())
		}
		fmt.Fprintln(os.Stderr, "echo: bye")
		return 0
	case "stubborn": // ignore stdin EOF and SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	case "termable": // ignore stdin EOF, exit on SIGTERM
		fmt.Println("ready")
		select {}
	case "grandchild": // start a grandchild that sleeps, print its pid, then serve like echo
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "STDIOHOST_HELPER=sleep")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(cmd.Process.Pid)
		return helperMain("echo")
	case "sleep":
		signal.Ignore(syscall.SIGTERM) // only SIGKILL of the group gets rid of it
		time.Sleep(time.Hour)
		return 0
	case "usage": // wrong arguments: the usage text on stderr, exit 2
		fmt.Fprintln(os.Stderr, "usage: server --root DIR\n  --root DIR  the directory to serve")
		return 2
	case "stderr": // CRLF, blank and over-long lines on stderr, then exit
		fmt.Fprint(os.Stderr, "one\r\n\n"+strings.Repeat("x", 20000)+"\ntwo")
		return 0
	case "args": // print the arguments as one JSON line
		b, _ := json.Marshal(os.Args[1:])
		fmt.Println(string(b))
		return 0
	case "crlf": // Windows-style line ends, as a child built for it may write
		fmt.Print("{\"a\":1}\r\n\r\n{\"b\":2}\r\n")
		return 0
	case "host": // a bridge in miniature: host a "grandchild" child, print both pids
		c := make(chan string, 1)
		h, err := Start(helperCmd("grandchild"), Options{OnMessage: func(m []byte) { c <- string(m) }})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(h.Pid(), <-c)
		select {} // until killed
	case "crash": // answer one line, then exit 3 while holding a grandchild
		sc := bufio.NewScanner(os.Stdin)
		sc.Scan()
		fmt.Println("last words")
		return 3
	}
	return platformHelper(mode)
}

func helperCmd(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STDIOHOST_HELPER="+mode)
	return cmd
}

type collector struct {
	mu   sync.Mutex
	msgs []string
	got  chan string
}

func newCollector() *collector { return &collector{got: make(chan string, 100)} }

func (c *collector) on(msg []byte) {
	c.mu.Lock()
	c.msgs = append(c.msgs, string(msg))
	c.mu.Unlock()
	c.got <- string(msg)
}

func (c *collector) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-c.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a child message")
		return ""
	}
}

func TestEchoRoundTrip(t *testing.T) {
	c := newCollector()
	var logs lockedBuffer
	// A TerminateDelay no exit on stdin EOF needs, even on a loaded
	// machine: a SIGTERM before it would say the child ignored EOF.
	h, err := Start(helperCmd("echo"), Options{OnMessage: c.on, TerminateDelay: 20 * time.Second,
		Logger: zerolog.New(&logs).Level(zerolog.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := h.Send([]byte(`{"id":` + strconv.Itoa(i) + `}`)); err != nil {
			t.Fatal(err)
		}
		if got, want := c.next(t), `{"id":`+strconv.Itoa(i)+`}`; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	start := time.Now()
	if err := h.Close(); err != nil {
		t.Errorf("Close() = %v, want nil (child exits 0 on stdin EOF)", err)
	}
	if d := time.Since(start); d > 15*time.Second || strings.Contains(logs.String(), "SIGTERM") {
		t.Errorf("Close took %v; a child that exits on EOF needs no signals:\n%s", d, logs.String())
	} else {
		t.Logf("Close took %v", d)
	}
	if err := h.Send([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

func TestCloseEscalatesToSIGKILL(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("stubborn"), Options{OnMessage: c.on, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.next(t) // ready: the signal handlers are installed
	if err := h.Close(); err != nil {
		t.Errorf("Close() = %v; a kill we sent ourselves is not an error", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

func TestGrandchildDiesWithGroup(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("grandchild"), Options{OnMessage: c.on, TerminateDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(c.next(t))
	if err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("grandchild %d not running", pid)
	}
	h.Close()
	waitGone(t, pid)
}

func TestChildCrashIsReportedPromptly(t *testing.T) {
	c := newCollector()
	h, err := Start(helperCmd("crash"), Options{OnMessage: c.on})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Send([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got := c.next(t); got != "last words" {
		t.Errorf("got %q, want the message written just before the crash", got)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the child crashed")
	}
	var ee *exec.ExitError
	if !errors.As(h.Err(), &ee) || ee.ExitCode() != 3 {
		t.Errorf("Err() = %v, want exit status 3", h.Err())
	}
	if err := h.Send([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send to a dead child = %v, want ErrClosed", err)
	}
}

// Each stderr line becomes one log record without its terminator; a line
// longer than the reader's 16 KiB buffer comes out in pieces, none lost.
func TestStderrLines(t *testing.T) {
	var logs bytes.Buffer
	h, err := Start(helperCmd("stderr"), Options{Logger: zerolog.New(zerolog.SyncWriter(&logs))})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	h.Close()
	var got []string
	dec := json.NewDecoder(&logs)
	for {
		var rec struct{ Stderr *string }
		if err := dec.Decode(&rec); err != nil {
			break
		}
		if rec.Stderr != nil {
			got = append(got, *rec.Stderr)
		}
	}
	want := []string{"one", strings.Repeat("x", 16<<10), strings.Repeat("x", 20000-16<<10), "two"}
	if !slices.Equal(got, want) {
		t.Errorf("stderr records = %.30q, want %.30q", got, want)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(nil, Options{}); !errors.Is(err, ErrNoCommand) {
		t.Errorf("Start(nil) = %v", err)
	}
	if _, err := Start(exec.Command("/nonexistent/mcp-server"), Options{}); err == nil {
		t.Error("Start of a missing binary succeeded")
	}
	cmd := helperCmd("echo")
	cmd.Stdout = os.Stdout
	if _, err := Start(cmd, Options{}); err == nil {
		t.Error("Start accepted a cmd with Stdout set")
	}
}

func TestSupervisorRestarts(t *testing.T) {
	var mu sync.Mutex
	starts := 0
	exits := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{
		Start: func() (*Host, error) {
			mu.Lock()
			starts++
			n := starts
			mu.Unlock()
			mode := "crash"
			if n >= 3 {
				mode = "echo"
			}
			h, err := Start(helperCmd(mode), Options{})
			if err == nil && mode == "crash" {
				h.Send([]byte("die"))
			}
			if n == 3 {
				cancel() // the third child is healthy: stop supervising
			}
			return h, err
		},
		OnExit:         func(*Host) { exits <- struct{}{} },
		InitialBackoff: 10 * time.Millisecond,
	}
	if err := s.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Run() = %v, want context.Canceled", err)
	}
	if starts != 3 || len(exits) != 2 {
		t.Errorf("starts=%d exits=%d, want 3 and 2", starts, len(exits))
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // a bound for a failure only: reaping on a loaded machine
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling the kernel, not synchronizing goroutines
	}
}
