package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"sync"
	"time"
)

const maxLineBytes = 32 << 20 // 32 MiB per message

// shutdownGrace bounds how long in-flight requests may run after stdin closes.
var shutdownGrace = 5 * time.Second

type config struct {
	modern         bool
	legacy         bool
	exitBeforeInit bool
	dataset        string
	dynamicTools   bool
	stepDelay      time.Duration
	startDelay     time.Duration
	debug          bool
}

// request is one inbound JSON-RPC request (with a non-null id).
type request struct {
	id     json.RawMessage
	key    string
	method string
	params map[string]json.RawMessage
	meta   map[string]json.RawMessage

	batch *batchCollector
	slot  int

	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by server.writeMu: once cancelled or done nothing more is written.
	cancelled bool
	done      bool
}

type handlerFunc func(req *request) (any, *rpcError)

type elicitReply struct {
	result  json.RawMessage
	err     *rpcError
	aborted bool
}

type server struct {
	cfg     config
	logger  *log.Logger
	store   *store
	tools   *toolRegistry
	baseCtx context.Context

	writeMu     sync.Mutex
	out         io.Writer
	writeFailed bool

	mu                sync.Mutex
	inflight          map[string]*request
	initialized       bool
	legacyVersion     string
	legacyElicitation bool
	legacyLogLevel    int
	pending           map[string]chan elicitReply
	elicitSeq         int
	eof               bool
	cancelledCount    int
	requestCount      int

	subsMu sync.Mutex // lock order: subsMu -> mu -> writeMu
	subs   []*subscription

	eofCh chan struct{}
	wg    sync.WaitGroup
}

func newServer(cfg config, stdout, stderr io.Writer) *server {
	now := time.Now()
	return &server{
		cfg:            cfg,
		logger:         log.New(stderr, "memos: ", 0),
		store:          newStore(cfg.dataset, now),
		tools:          newToolRegistry(cfg.dynamicTools),
		out:            stdout,
		inflight:       map[string]*request{},
		pending:        map[string]chan elicitReply{},
		legacyLogLevel: -1,
		eofCh:          make(chan struct{}),
	}
}

type inLine struct {
	data    []byte
	tooLong bool
}

// readLines splits stdin into newline-delimited messages of at most maxLineBytes.
func readLines(r io.Reader, ch chan<- inLine, stop <-chan struct{}, logger *log.Logger) {
	defer close(ch)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxLineBytes+2 { // allow for "\r\n"
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			logger.Printf("read error: %v", err)
		}
		if len(buf) > 0 || tooLong {
			select {
			case ch <- inLine{data: buf, tooLong: tooLong}:
			case <-stop:
				return
			}
		}
		if err != nil {
			return
		}
		buf, tooLong = nil, false
	}
}

// serve runs the read loop until stdin closes (exit 0), ctx ends or an early
// probe triggers -exit-before-init (exit 1).
func (s *server) serve(ctx context.Context, stdin io.Reader) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.baseCtx = ctx
	lines := make(chan inLine)
	stop := make(chan struct{})
	defer close(stop)
	go readLines(stdin, lines, stop, s.logger)
	for {
		select {
		case <-ctx.Done():
			s.logger.Printf("stopping: %v", ctx.Err())
			return 1
		case l, ok := <-lines:
			if !ok {
				return s.drain(ctx)
			}
			if s.handleLine(l) {
				return 1
			}
		}
	}
}

func (s *server) drain(ctx context.Context) int {
	s.logger.Printf("stdin closed; waiting for in-flight requests")
	s.beginShutdown()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(shutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.logger.Printf("gave up waiting for in-flight requests after %v", shutdownGrace)
	case <-ctx.Done():
	}
	return 0
}

// beginShutdown ends listen streams and aborts elicitations that can no longer be answered.
func (s *server) beginShutdown() {
	s.mu.Lock()
	s.eof = true
	for k, ch := range s.pending {
		ch <- elicitReply{aborted: true}
		delete(s.pending, k)
	}
	s.mu.Unlock()
	close(s.eofCh)
}

func (s *server) handleLine(l inLine) (exit bool) {
	if l.tooLong {
		s.immediate(nil, nil, nil, newError(codeParseError, "Parse error: message exceeds 32 MiB"))
		return false
	}
	line := bytes.TrimSpace(l.data)
	if len(line) == 0 {
		return false
	}
	if s.cfg.debug {
		s.logger.Printf("<- %s", truncate(line, 400))
	}
	if !json.Valid(line) {
		s.immediate(nil, nil, nil, newError(codeParseError, "Parse error"))
		return false
	}
	if line[0] == '[' {
		s.handleBatch(line)
		return false
	}
	return s.handleMessage(line, nil)
}

func (s *server) handleMessage(raw []byte, batch *batchCollector) (exit bool) {
	var msg inMessage
	if raw[0] != '{' || json.Unmarshal(raw, &msg) != nil {
		s.immediate(batch, nil, nil, newError(codeInvalidRequest, "Invalid Request"))
		return false
	}
	if msg.Method == nil {
		if !isNull(msg.ID) && (msg.Result != nil || msg.Error != nil) {
			s.routeResponse(msg)
			return false
		}
		var id json.RawMessage
		if validID(msg.ID) {
			id = msg.ID
		}
		s.immediate(batch, id, nil, newError(codeInvalidRequest, "Invalid Request"))
		return false
	}
	if isNull(msg.ID) {
		s.handleNotification(msg)
		return false
	}
	if !validID(msg.ID) {
		s.immediate(batch, nil, nil, newError(codeInvalidRequest, "Invalid Request: id must be a string or an integer"))
		return false
	}
	return s.handleRequest(msg, batch)
}

func (s *server) handleRequest(msg inMessage, batch *batchCollector) (exit bool) {
	s.mu.Lock()
	s.requestCount++
	initialized := s.initialized
	s.mu.Unlock()
	method := *msg.Method
	if msg.JSONRPC != "2.0" {
		s.immediate(batch, msg.ID, nil, newError(codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`))
		return false
	}
	params, ok := parseObject(msg.Params)
	if !ok {
		s.immediate(batch, msg.ID, nil, newError(codeInvalidParams, "Invalid params: params must be an object"))
		return false
	}
	req := &request{id: msg.ID, key: idKey(msg.ID), method: method, params: params, meta: metaOf(params), batch: batch}
	_, modernTagged := req.meta[metaProtocolVersion]

	if method == "initialize" {
		if batch != nil {
			s.immediate(batch, req.id, nil, newError(codeInvalidRequest, "Invalid Request: initialize must not be part of a batch"))
			return false
		}
		s.handleInitialize(req)
		return false
	}
	if !s.cfg.modern {
		if method != "ping" && !initialized && s.cfg.exitBeforeInit {
			s.logger.Printf("exiting: %s received before initialize (-exit-before-init)", method)
			return true
		}
		switch {
		case method == "server/discover":
			s.immediate(batch, req.id, nil, newError(codeMethodNotFound, "Method not found: "+method))
		case modernTagged && method != "ping" && !initialized:
			s.immediate(batch, req.id, nil, newError(codeInvalidRequest, "not initialized"))
		case modernTagged && method != "ping":
			s.immediate(batch, req.id, nil, newError(codeMethodNotFound, "Method not found: "+method))
		default:
			s.legacyRequest(req, initialized)
		}
		return false
	}
	if modernTagged || method == "server/discover" || !s.cfg.legacy {
		s.modernRequest(req)
		return false
	}
	s.legacyRequest(req, initialized)
	return false
}

func (s *server) handleNotification(msg inMessage) {
	method := *msg.Method
	switch method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || isNull(p.RequestID) {
			s.logger.Printf("ignoring malformed notifications/cancelled")
			return
		}
		s.cancelRequest(idKey(p.RequestID), p.Reason)
	default:
		if s.cfg.debug {
			s.logger.Printf("notification %s", method)
		}
	}
}

func (s *server) routeResponse(msg inMessage) {
	key := idKey(msg.ID)
	s.mu.Lock()
	ch := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if ch == nil {
		s.logger.Printf("ignoring response for unknown request %s", key)
		return
	}
	ch <- elicitReply{result: msg.Result, err: msg.Error}
}

// spawn registers req as in flight and runs fn on its own goroutine.
func (s *server) spawn(req *request, fn handlerFunc) {
	req.ctx, req.cancel = context.WithCancel(s.baseCtx)
	if req.batch != nil {
		req.slot = req.batch.reserve()
		req.batch.wg.Add(1)
	}
	s.mu.Lock()
	s.inflight[req.key] = req
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer req.cancel()
		res, rerr := fn(req)
		s.complete(req, res, rerr)
	}()
}

// complete writes the final response for req unless it was cancelled.
// A nil result and nil error means "no response".
func (s *server) complete(req *request, res any, rerr *rpcError) {
	var line []byte
	if res != nil || rerr != nil {
		line = s.encode(outResponse{JSONRPC: "2.0", ID: req.id, Result: res, Error: rerr})
	}
	s.writeMu.Lock()
	write := line != nil && !req.cancelled
	req.done = true
	if write && req.batch == nil {
		s.writeLocked(line)
	}
	s.writeMu.Unlock()
	if req.batch != nil {
		if write {
			req.batch.set(req.slot, bytes.TrimSuffix(line, []byte("\n")))
		}
		req.batch.wg.Done()
	}
	s.mu.Lock()
	if s.inflight[req.key] == req {
		delete(s.inflight, req.key)
	}
	s.mu.Unlock()
}

func (s *server) cancelRequest(key, reason string) {
	s.mu.Lock()
	req := s.inflight[key]
	if req != nil {
		delete(s.inflight, key)
	}
	s.mu.Unlock()
	if req == nil {
		s.logger.Printf("cancellation for %s ignored: not in flight", key)
		return
	}
	s.writeMu.Lock()
	matched := !req.done
	req.cancelled = true
	s.writeMu.Unlock()
	if matched {
		s.mu.Lock()
		s.cancelledCount++
		s.mu.Unlock()
	}
	s.logger.Printf("cancelled request %s (%s)", key, reason)
	req.cancel()
}

// immediate answers without registering the request as in flight.
func (s *server) immediate(batch *batchCollector, id json.RawMessage, res any, rerr *rpcError) {
	line := s.encode(outResponse{JSONRPC: "2.0", ID: id, Result: res, Error: rerr})
	if batch != nil {
		batch.set(batch.reserve(), bytes.TrimSuffix(line, []byte("\n")))
		return
	}
	s.writeMu.Lock()
	s.writeLocked(line)
	s.writeMu.Unlock()
}

// sendFor writes a message that belongs to req (progress, log, ...).
func (s *server) sendFor(req *request, v any) bool {
	line := s.encode(v)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if req.cancelled || req.done {
		return false
	}
	s.writeLocked(line)
	return true
}

// sendUnsolicited writes a message that belongs to no request.
func (s *server) sendUnsolicited(v any) {
	line := s.encode(v)
	s.writeMu.Lock()
	s.writeLocked(line)
	s.writeMu.Unlock()
}

func (s *server) encode(v any) []byte {
	line, err := encodeLine(v)
	if err != nil {
		s.logger.Printf("encode error: %v", err)
		line, _ = encodeLine(outResponse{JSONRPC: "2.0", Error: newError(codeInternalError, "Internal error")})
	}
	return line
}

func (s *server) writeLocked(line []byte) {
	if s.writeFailed {
		return
	}
	if _, err := s.out.Write(line); err != nil {
		s.writeFailed = true
		s.logger.Printf("write error: %v", err)
		return
	}
	if s.cfg.debug {
		s.logger.Printf("-> %s", truncate(bytes.TrimSuffix(line, []byte("\n")), 400))
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
