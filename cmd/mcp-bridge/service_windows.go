package main

import (
	"context"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/windows/svc"
)

// runService runs the command under the Windows service control manager
// when the process was started as a service (sc.exe create ... binPath=
// "mcp-bridge.exe serve ..."). A stop or shutdown request cancels the
// command's context, which serve handles like SIGTERM: in-flight requests
// finish within --shutdown-timeout, then every child job is closed. Console
// Ctrl-C and Ctrl-Break arrive as os.Interrupt and console close, logoff
// and shutdown as SIGTERM (Go's runtime maps them), so the commands'
// signal handling covers an interactive run.
func runService(args []string) (code int, ok bool) {
	if is, err := svc.IsWindowsService(); err != nil || !is {
		return 0, false
	}
	s := &service{args: args}
	if err := svc.Run("mcp-bridge", s); err != nil {
		return exitFailure, true
	}
	return s.code, true
}

type service struct {
	args []string
	code int
}

func (s *service) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	// A service has no console: stdin is empty, and logs go to stderr,
	// which the service's configuration may redirect.
	go func() { done <- run(ctx, s.args, strings.NewReader(""), io.Discard, os.Stderr) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
			}
		case s.code = <-done:
			status <- svc.Status{State: svc.StopPending}
			return false, uint32(s.code)
		}
	}
}
