package exec

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/lineio"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives the audit line of every execution and the server's
	// own events. The zero value discards them.
	Logger zerolog.Logger
	// Version is serverInfo.version.
	Version string
	// MaxMessageSize bounds one inbound message; if zero, 4 MiB.
	MaxMessageSize int
	// DrainGrace is how long calls in flight may finish once stdin has
	// ended before they are cancelled; if zero, 5s.
	DrainGrace time.Duration
}

// maxInFlight bounds the calls one server runs or queues at once (each
// tool has its own, smaller, concurrency bound under it).
const maxInFlight = 256

// A Server answers MCP on a stdio stream with the tools of one file, in
// both protocol eras: a 2025 client opens with initialize and its session
// is the stream; a 2026-07-28 client sends server/discover and a _meta
// envelope on every request, and no request relies on another.
type Server struct {
	tools  *Tools
	opts   Options
	log    zerolog.Logger
	w      *lineio.Writer
	info   []byte // serverInfo object
	legacy []byte // the tools array, encoded once
	wg     sync.WaitGroup

	mu          sync.Mutex
	calls       map[string]*call
	initialized bool
}

// New returns a Server for tools.
func New(tools *Tools, opts Options) *Server {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = 4 << 20
	}
	if opts.DrainGrace <= 0 {
		opts.DrainGrace = 5 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	info, _ := json.Marshal(map[string]string{"name": "mcp-bridge exec", "version": opts.Version})
	s := &Server{tools: tools, opts: opts, log: opts.Logger, info: info, calls: map[string]*call{}}
	s.legacy = s.toolsArray()
	return s
}

// Serve answers the messages read from in on out until in ends or ctx is
// done. At the end of input, calls in flight get DrainGrace to finish and
// are then cancelled (their programs stopped); Serve returns once every
// program it started is gone. When ctx ends, in is closed if it is an
// io.Closer, to end a read that would otherwise block.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.w = lineio.NewWriter(out)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var watch sync.WaitGroup
	readDone := make(chan struct{})
	if c, ok := in.(io.Closer); ok {
		watch.Go(func() {
			select {
			case <-ctx.Done():
				c.Close()
			case <-readDone:
			}
		})
	}
	r := lineio.NewReader(in, s.opts.MaxMessageSize)
	for {
		line, err := r.Read()
		if errors.Is(err, lineio.ErrTooLong) {
			s.send(wire.ErrorResponse(nil, wire.CodeParseError, "Parse error: message too long", nil))
			continue
		}
		if err != nil {
			break
		}
		s.handle(ctx, line)
	}
	close(readDone)
	watch.Wait()

	// 2026-07-28 stdio §Shutdown: "Servers SHOULD exit promptly when their
	// standard input is closed"; a call already running may still answer
	// a host that closed stdin but reads stdout, for a short while.
	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	t := time.NewTimer(s.opts.DrainGrace)
	select {
	case <-drained:
	case <-t.C:
		s.log.Warn().Msg("exec: stdin closed; cancelling the calls still running")
		cancel()
		<-drained
	case <-ctx.Done():
		<-drained
	}
	t.Stop()
	return parent.Err()
}

func (s *Server) send(msg []byte) {
	if err := s.w.Write(msg); err != nil {
		s.log.Debug().Err(err).Msg("exec: write failed")
	}
}

func (s *Server) handle(ctx context.Context, line []byte) {
	if !wire.Valid(line) {
		s.send(wire.ErrorResponse(nil, wire.CodeParseError, "Parse error", nil))
		return
	}
	var m wire.Message
	if err := wire.Parse(line, &m); err != nil {
		msg := wire.Refusal(err)
		if errors.Is(err, wire.ErrNotMessage) && line[0] == '[' {
			msg = "Invalid Request: JSON-RPC batches are not supported"
		}
		s.send(wire.ErrorResponse(nil, wire.CodeInvalidRequest, msg, nil))
		return
	}
	switch m.Kind {
	case wire.KindNotification:
		if m.Method == "notifications/cancelled" && m.RequestID.Present() {
			s.cancel(idKey(m.Bytes(m.RequestID)))
		}
	case wire.KindRequest:
		s.request(ctx, &m)
	}
}

func (s *Server) request(ctx context.Context, m *wire.Message) {
	id := append([]byte(nil), m.IDBytes()...)
	// 2026-07-28 versioning: a request is modern when its _meta names a
	// protocol version; server/discover exists only there.
	if m.IsModern() || m.Method == "server/discover" {
		if msg := checkEnvelope(m); msg != nil {
			s.send(msg)
			return
		}
		switch m.Method {
		case "server/discover":
			s.send(wire.ResultResponse(id, s.discoverResult()))
		case "tools/list":
			s.send(wire.ResultResponse(id, s.toolsListResult(true)))
		case "tools/call":
			s.call(ctx, m, id, true)
		default:
			s.send(wire.ErrorResponse(id, wire.CodeMethodNotFound, "Method not found: "+m.Method, nil))
		}
		return
	}
	switch m.Method {
	case "initialize":
		s.initialize(m, id)
	case "ping":
		s.send(wire.ResultResponse(id, []byte("{}")))
	case "tools/list", "tools/call":
		s.mu.Lock()
		ok := s.initialized
		s.mu.Unlock()
		switch {
		case !ok:
			s.send(wire.ErrorResponse(id, wire.CodeInvalidRequest, "Invalid Request: not initialized (send initialize, or a 2026-07-28 _meta envelope)", nil))
		case m.Method == "tools/list":
			s.send(wire.ResultResponse(id, s.toolsListResult(false)))
		default:
			s.call(ctx, m, id, false)
		}
	default:
		s.send(wire.ErrorResponse(id, wire.CodeMethodNotFound, "Method not found: "+m.Method, nil))
	}
}

// checkEnvelope answers a modern request whose _meta envelope is not one
// this server can serve; nil when it is.
func checkEnvelope(m *wire.Message) []byte {
	id := m.IDBytes()
	switch {
	case m.ProtocolVersion == "":
		// basic/index §_meta: "A request missing any required field is
		// malformed; the server MUST reject it with JSON-RPC error code
		// -32602 (Invalid params)."
		return wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: missing _meta "+wire.MetaProtocolVersion, nil)
	case m.ProtocolVersion != translate.Modern:
		data, _ := json.Marshal(map[string]any{"supported": []string{translate.Modern}, "requested": m.ProtocolVersion})
		return wire.ErrorResponse(id, wire.CodeUnsupportedVersion, "Unsupported protocol version", data)
	case !m.HasClientCapabilities:
		return wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: missing _meta "+wire.MetaClientCapabilities, nil)
	}
	return nil
}

func (s *Server) initialize(m *wire.Message, id []byte) {
	pv, ok := wire.StringField(m.Raw, m.Params, "protocolVersion")
	if !ok {
		s.send(wire.ErrorResponse(id, wire.CodeInvalidParams, "Invalid params: protocolVersion must be a string", nil))
		return
	}
	s.mu.Lock()
	again := s.initialized
	s.initialized = true
	s.mu.Unlock()
	if again {
		s.send(wire.ErrorResponse(id, wire.CodeInvalidRequest, "Invalid Request: already initialized", nil))
		return
	}
	b := wire.AppendString([]byte(`{"protocolVersion":`), translate.NegotiateLegacy(pv))
	b = append(b, `,"capabilities":{"tools":{"listChanged":false}},"serverInfo":`...)
	b = append(append(b, s.info...), '}')
	s.send(wire.ResultResponse(id, b))
}

// cacheTTLMs: the tools are fixed for the life of the process (a new file
// means a new exec), and the list is the same for every client.
const cacheTTLMs = 3600000

func (s *Server) discoverResult() []byte {
	b := wire.AppendString([]byte(`{"resultType":"complete","supportedVersions":[`), translate.Modern)
	b = append(b, `],"capabilities":{"tools":{"listChanged":false}},"ttlMs":`...)
	b = wire.AppendInt(b, cacheTTLMs)
	b = append(b, `,"cacheScope":"public","_meta":{"`+wire.MetaServerInfo+`":`...)
	return append(append(b, s.info...), "}}"...)
}

func (s *Server) toolsListResult(modern bool) []byte {
	if !modern {
		return append(append([]byte(`{"tools":`), s.legacy...), '}')
	}
	b := append([]byte(`{"resultType":"complete","tools":`), s.legacy...)
	b = append(b, `,"ttlMs":`...)
	b = wire.AppendInt(b, cacheTTLMs)
	b = append(b, `,"cacheScope":"public","_meta":{"`+wire.MetaServerInfo+`":`...)
	return append(append(b, s.info...), "}}"...)
}

type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

func (s *Server) toolsArray() []byte {
	list := make([]toolJSON, 0, len(s.tools.List))
	for _, t := range s.tools.List {
		list = append(list, toolJSON{t.Name, t.Title, t.Description, t.InputSchema, outputSchema, t.Annotations})
	}
	b, _ := json.Marshal(list)
	return b
}

// idKey identifies a request id for cancellation: the id's JSON, with a
// string id decoded so that "\u0061" and "a" are one id.
func idKey(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	return "n:" + string(raw)
}
