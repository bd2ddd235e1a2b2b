package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Legacy (handshake) era: 2025-11-25, 2025-06-18 and 2025-03-26.

func (s *server) handleInitialize(req *request) {
	pvRaw := req.params["protocolVersion"]
	if !s.cfg.legacy {
		requested := json.RawMessage("null")
		if !isNull(pvRaw) {
			requested = pvRaw
		}
		s.immediate(nil, req.id, nil, unsupportedVersion(requested))
		return
	}
	var pv string
	if json.Unmarshal(pvRaw, &pv) != nil {
		s.immediate(nil, req.id, nil, newError(codeInvalidParams, "Invalid params: protocolVersion must be a string"))
		return
	}
	caps, ok := parseObject(req.params["capabilities"])
	if !ok {
		s.immediate(nil, req.id, nil, newError(codeInvalidParams, "Invalid params: capabilities must be an object"))
		return
	}
	negotiated := legacyVersions[0]
	if slices.Contains(legacyVersions, pv) {
		negotiated = pv
	}
	s.mu.Lock()
	if s.initialized {
		s.mu.Unlock()
		s.immediate(nil, req.id, nil, newError(codeInvalidRequest, "already initialized"))
		return
	}
	s.initialized = true
	s.legacyVersion = negotiated
	s.legacyElicitation = !isNull(caps["elicitation"])
	s.mu.Unlock()
	s.logger.Printf("initialized: protocol %s (client asked for %s)", negotiated, pv)

	var res initializeResult
	res.ProtocolVersion = negotiated
	res.Capabilities.Tools.ListChanged = s.cfg.dynamicTools
	res.ServerInfo = serverInfo
	res.Instructions = serverInstructions
	s.immediate(nil, req.id, res, nil)
}

func (s *server) legacyRequest(req *request, initialized bool) {
	if req.method == "ping" {
		s.spawn(req, func(*request) (any, *rpcError) { return struct{}{}, nil })
		return
	}
	if !initialized {
		s.immediate(req.batch, req.id, nil, newError(codeInvalidRequest, "not initialized"))
		return
	}
	switch req.method {
	case "logging/setLevel":
		s.legacySetLevel(req)
	case "tools/list":
		s.spawn(req, func(*request) (any, *rpcError) {
			return toolsListResult{Tools: s.tools.list()}, nil
		})
	case "tools/call":
		env := s.legacyEnv(req) // snapshot the log level at dispatch time
		s.spawn(req, func(*request) (any, *rpcError) { return s.callTool(env) })
	default:
		s.immediate(req.batch, req.id, nil, newError(codeMethodNotFound, "Method not found: "+req.method))
	}
}

// legacySetLevel is handled synchronously so later tool calls see the new level.
func (s *server) legacySetLevel(req *request) {
	var level string
	if json.Unmarshal(req.params["level"], &level) != nil {
		s.immediate(req.batch, req.id, nil, newError(codeInvalidParams, "Invalid params: level must be a string"))
		return
	}
	n, ok := logLevels[level]
	if !ok {
		s.immediate(req.batch, req.id, nil, newError(codeInvalidParams, "Invalid log level: "+level))
		return
	}
	s.mu.Lock()
	s.legacyLogLevel = n
	s.mu.Unlock()
	s.immediate(req.batch, req.id, struct{}{}, nil)
}

func (s *server) legacyEnv(req *request) *callEnv {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &callEnv{
		s:             s,
		req:           req,
		version:       s.legacyVersion,
		elicitation:   s.legacyElicitation,
		logLevel:      s.legacyLogLevel,
		progressToken: progressToken(req.meta),
	}
}

func progressToken(meta map[string]json.RawMessage) json.RawMessage {
	if raw := meta[metaProgressToken]; !isNull(raw) && validID(raw) {
		return raw
	}
	return nil
}

// handleBatch answers a JSON array of messages; batching exists only in 2025-03-26.
func (s *server) handleBatch(line []byte) {
	s.mu.Lock()
	ok := s.initialized && s.legacyVersion == "2025-03-26"
	s.mu.Unlock()
	if !ok {
		s.immediate(nil, nil, nil, newError(codeInvalidRequest, "Invalid Request: batches are only supported with protocol version 2025-03-26"))
		return
	}
	var elems []json.RawMessage
	if json.Unmarshal(line, &elems) != nil || len(elems) == 0 {
		s.immediate(nil, nil, nil, newError(codeInvalidRequest, "Invalid Request"))
		return
	}
	b := &batchCollector{}
	for _, e := range elems {
		s.handleMessage(e, b)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		b.wg.Wait()
		if out := b.joined(); out != nil {
			s.writeMu.Lock()
			s.writeLocked(out)
			s.writeMu.Unlock()
		}
	}()
}

// elicitLegacy sends elicitation/create to the client and waits for its answer.
// A non-nil error means the calling request was cancelled.
func (s *server) elicitLegacy(env *callEnv, message string) (elicitReply, error) {
	s.mu.Lock()
	if s.eof {
		s.mu.Unlock()
		return elicitReply{aborted: true}, nil
	}
	s.elicitSeq++
	id, _ := json.Marshal(fmt.Sprintf("memos-elicit-%d", s.elicitSeq))
	ch := make(chan elicitReply, 1)
	s.pending[string(id)] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, string(id))
		s.mu.Unlock()
	}

	params := elicitParams{Message: message, RequestedSchema: json.RawMessage(confirmSchema)}
	if env.version == "2025-11-25" {
		params.Mode = "form"
	}
	if !s.sendFor(env.req, outRequest{JSONRPC: "2.0", ID: id, Method: "elicitation/create", Params: params}) {
		forget()
		return elicitReply{}, context.Canceled
	}
	select {
	case r := <-ch:
		return r, nil
	case <-env.req.ctx.Done():
		forget()
		return elicitReply{}, env.req.ctx.Err()
	}
}

// batchCollector gathers the responses of one JSON-RPC batch (2025-03-26 only).
type batchCollector struct {
	mu    sync.Mutex
	slots [][]byte
	wg    sync.WaitGroup
}

func (b *batchCollector) reserve() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots = append(b.slots, nil)
	return len(b.slots) - 1
}

func (b *batchCollector) set(i int, data []byte) {
	b.mu.Lock()
	b.slots[i] = data
	b.mu.Unlock()
}

func (b *batchCollector) joined() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var parts [][]byte
	for _, p := range b.slots {
		if p != nil {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	out := append([]byte{'['}, bytes.Join(parts, []byte{','})...)
	return append(out, ']', '\n')
}
