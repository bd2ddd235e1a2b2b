package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// A call is one tools/call in flight.
type call struct {
	cancel context.CancelFunc
	// mu orders the call's messages against its cancellation: once
	// cancelled, nothing more is written for it (2026-07-28 stdio
	// §Cancellation: the server "MUST NOT send any further messages for
	// it").
	mu        sync.Mutex
	cancelled bool
}

// sendFor writes msg unless the call was cancelled.
func (c *call) sendFor(s *Server, msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cancelled {
		s.send(msg)
	}
}

func (s *Server) cancel(key string) {
	s.mu.Lock()
	c := s.calls[key]
	s.mu.Unlock()
	if c == nil {
		return // done already, or never seen: nothing to do
	}
	c.mu.Lock()
	c.cancelled = true
	c.mu.Unlock()
	c.cancel()
}

// call checks a tools/call and runs it on a goroutine of its own. What is
// wrong with the request (unknown tool, arguments the schema refuses, a
// value that may not fill its slot) is a -32602 error and nothing runs.
func (s *Server) call(ctx context.Context, m *wire.Message, id []byte, modern bool) {
	t, ok := s.tools.Lookup(m.Name)
	if !ok {
		s.send(wire.ErrorResponse(id, wire.CodeInvalidParams, "Unknown tool: "+m.Name, nil))
		return
	}
	var args any = map[string]any{}
	if m.Arguments.Present() && string(m.Bytes(m.Arguments)) != "null" {
		if err := decodeStrict(m.Bytes(m.Arguments), &args); err != nil {
			s.send(wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: arguments: "+err.Error(), nil))
			return
		}
	}
	if err := t.schema.validate(args, "arguments"); err != nil {
		s.send(wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: "+err.Error(), nil))
		return
	}
	argMap := args.(map[string]any) // validated: the schema's type is object
	argv, err := buildArgv(t.templates, argMap, t.AllowDashes)
	if err != nil {
		s.send(wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: "+err.Error(), nil))
		return
	}
	var token []byte
	if m.ProgressToken.Present() {
		token = bytes.Clone(m.Bytes(m.ProgressToken))
	}

	key := idKey(id)
	cctx, cancel := context.WithCancel(ctx)
	c := &call{cancel: cancel}
	s.mu.Lock()
	_, dup := s.calls[key]
	busy := len(s.calls) >= maxInFlight
	if !dup && !busy {
		s.calls[key] = c
	}
	s.mu.Unlock()
	switch {
	case dup:
		cancel()
		s.send(wire.ErrorResponse(id, wire.CodeInvalidRequest, "Invalid Request: a request with this id is in flight", nil))
		return
	case busy:
		cancel()
		s.send(wire.ErrorResponse(id, wire.CodeInternalError, fmt.Sprintf("exec: %d calls in flight; try again later", maxInFlight), nil))
		return
	}

	s.wg.Go(func() {
		defer cancel()
		var progress func(lines, bytes int64)
		if token != nil {
			progress = func(lines, n int64) {
				c.sendFor(s, progressNotification(token, n, lines))
			}
		}
		o := t.run(cctx, argv, progress)
		s.audit(t, argMap, o)
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
		if o.cancelled {
			return
		}
		r := o.result(t.Name)
		if modern {
			r.ResultType = "complete"
			r.Meta = append(append([]byte(`{"`+wire.MetaServerInfo+`":`), s.info...), '}')
		}
		b, err := json.Marshal(r)
		if err != nil {
			b = wire.ErrorResponse(id, wire.CodeInternalError, "exec: encoding the result: "+err.Error(), nil)
		} else {
			b = wire.ResultResponse(id, b)
		}
		c.sendFor(s, b)
	})
}

// progressNotification reports the output so far: progress counts bytes
// (it "MUST increase with each notification"), the message counts lines.
func progressNotification(token []byte, n, lines int64) []byte {
	p := append([]byte(`{"progressToken":`), token...)
	p = append(p, `,"progress":`...)
	p = wire.AppendInt(p, n)
	p = wire.AppendString(append(p, `,"message":`...), fmt.Sprintf("%d bytes, %d lines of output so far", n, lines))
	return wire.Notification("notifications/progress", append(p, '}'))
}

const redacted = "[REDACTED]"

// audit writes the one log line of an execution: the tool, its argv with
// the values of the declared secrets replaced, how it ended and how long
// it took. The arguments themselves are not logged: argv is what ran.
func (s *Server) audit(t *Tool, args map[string]any, o outcome) {
	argv := o.argv
	if len(t.Secrets) > 0 {
		masked := make(map[string]any, len(args))
		for k, v := range args {
			switch {
			case !slices.Contains(t.Secrets, k):
				masked[k] = v
			case isArray(v):
				masked[k] = []any{redacted}
			default:
				masked[k] = redacted
			}
		}
		argv, _ = buildArgv(t.templates, masked, t.AllowDashes)
	}
	ev := s.log.Info()
	if o.exitCode != 0 || o.timedOut || o.startErr != nil {
		ev = s.log.Warn()
	}
	ev = ev.Str("tool", t.Name).Str("command", t.Command).Strs("argv", argv).
		Int("exit_code", o.exitCode).Int64("duration_ms", o.duration.Milliseconds()).
		Int64("stdout_bytes", o.stdout.total).Int64("stderr_bytes", o.stderr.total)
	if o.timedOut {
		ev = ev.Bool("timed_out", true)
	}
	if o.cancelled {
		ev = ev.Bool("cancelled", true)
	}
	if o.startErr != nil {
		ev = ev.AnErr("start_error", o.startErr)
	}
	ev.Msg("exec")
}

func isArray(v any) bool { _, ok := v.([]any); return ok }
