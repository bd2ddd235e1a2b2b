package stdiohost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// echoRun is an in-process server that echoes lines until stdin ends.
func echoRun(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		fmt.Fprintln(stdout, sc.Text())
	}
	return nil
}

func TestStartFuncEcho(t *testing.T) {
	got := make(chan string, 1)
	h, err := StartFunc(echoRun, Options{OnMessage: func(b []byte) { got <- string(b) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Send([]byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != `{"x":1}` {
		t.Fatalf("echo = %q", s)
	}
	if h.Pid() != 0 {
		t.Fatalf("Pid = %d, want 0 for an in-process server", h.Pid())
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

// A server that ignores its stdin's end is cancelled after TerminateDelay
// and joined; Close does not report the cancellation it caused.
func TestStartFuncCloseCancels(t *testing.T) {
	h, err := StartFunc(func(ctx context.Context, _ io.Reader, _ io.Writer) error {
		<-ctx.Done()
		return ctx.Err()
	}, Options{TerminateDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if !errors.Is(h.Err(), context.Canceled) {
		t.Fatalf("Err = %v", h.Err())
	}
}

// A server that returns on its own is Done with its error, like an exited
// process; a server that stops reading is cancelled by the write timeout.
func TestStartFuncExitAndHang(t *testing.T) {
	boom := errors.New("boom")
	h, err := StartFunc(func(context.Context, io.Reader, io.Writer) error { return boom }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	if !errors.Is(h.Err(), boom) {
		t.Fatalf("Err = %v", h.Err())
	}
	if err := h.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v", err)
	}

	h, err = StartFunc(func(ctx context.Context, _ io.Reader, _ io.Writer) error {
		<-ctx.Done() // never reads stdin
		return nil
	}, Options{WriteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'a'
	}
	var sendErr error
	for range 64 {
		if sendErr = h.Send(big); sendErr != nil {
			break
		}
	}
	if !errors.Is(sendErr, ErrHung) && !errors.Is(sendErr, ErrClosed) {
		t.Fatalf("Send to a server that does not read = %v, want ErrHung", sendErr)
	}
	<-h.Done()
	h.Close()
}
