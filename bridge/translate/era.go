package translate

import (
	"encoding/json"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Era detection, written once for both faces. serve asks its stdio child
// (server/discover and initialize, each to a fresh sibling process);
// connect watches the host's own traffic to the HTTP remote and asks
// server/discover when that is ambiguous. Each face owns only its
// transport: how to send a question and how to turn what came back into
// Evidence. What the evidence means is decided here, by Decide
// (2026-07-28 versioning and streamable-http §Backward Compatibility; the
// decision table is in docs/compatibility.md).

// Era is what a peer was found to speak.
type Era int8

const (
	EraUnknown Era = iota
	EraModern      // 2026-07-28
	EraLegacy      // a 2025 handshake era
)

func (e Era) String() string {
	switch e {
	case EraModern:
		return "modern"
	case EraLegacy:
		return "legacy"
	}
	return "unknown"
}

// Answer is what came back to one request, in the transport's neutral
// terms: each transport adapter maps its own outcomes onto these.
type Answer int8

const (
	// AnswerNone is no usable answer: none in time, the peer gone, an
	// outage (HTTP 5xx, 429) or an authorization refusal (401, 403).
	// It is no era evidence.
	AnswerNone Answer = iota
	// AnswerResult is a JSON-RPC result.
	AnswerResult
	// AnswerError is a JSON-RPC error answered in band.
	AnswerError
	// AnswerRefused is the transport refusing the request as malformed or
	// unknown (HTTP 400, 404); Code is set when its body was a JSON-RPC
	// error.
	AnswerRefused
	// AnswerNotAllowed is the endpoint refusing the kind of request (HTTP
	// 405): whatever error its body carries, the request is not served.
	AnswerNotAllowed
	// AnswerEmpty is a request accepted and never answered (HTTP 202, or
	// a stream that ended without the response).
	AnswerEmpty
)

// Evidence is one request and what came back to it.
type Evidence struct {
	Method string
	Modern bool // the request went in the 2026-07-28 _meta envelope
	Answer Answer
	// Code is the JSON-RPC error code (0 when there is no error).
	Code int
	// Supported are the versions the answer names: a DiscoverResult's
	// supportedVersions, or an UnsupportedProtocolVersion error's
	// data.supported.
	Supported []string
	// ProtocolVersion is an initialize result's protocolVersion.
	ProtocolVersion string
	// ResultType is a result's resultType ("" when absent).
	ResultType string
}

// Decision is what one piece of evidence says of the peer's era.
type Decision struct {
	Era Era
	// Version is the modern version to speak, for EraModern.
	Version string
	// Confirm marks weak evidence: a refusal that names no version, a
	// 2025-shaped answer, a handshake (a modern-only server answers even
	// a legacy initialize). A caller that is not itself probing asks
	// server/discover before acting on it; weak evidence of the era the
	// caller already speaks proves nothing yet.
	Confirm bool
}

// ResponseEvidence reads the evidence in a JSON-RPC response m to a
// request of method, sent in the modern envelope or not.
func ResponseEvidence(method string, modern bool, m *wire.Message) Evidence {
	e := Evidence{Method: method, Modern: modern}
	switch {
	case m.Error.Present():
		e.Answer, e.Code = AnswerError, m.ErrorCode
		e.Supported = errorSupported(m)
	case m.Result.Present():
		e.Answer, e.ResultType = AnswerResult, m.ResultType()
		switch method {
		case "server/discover":
			e.Supported = SupportedVersions(m)
		case "initialize":
			e.ProtocolVersion, _ = wire.StringField(m.Raw, m.Result, "protocolVersion")
		}
	}
	return e
}

// RefusalEvidence reads the evidence in a transport's refusal of a
// request (answer is AnswerRefused or AnswerNotAllowed) whose body may be
// a JSON-RPC error response.
func RefusalEvidence(method string, modern bool, answer Answer, body []byte) Evidence {
	e := Evidence{Method: method, Modern: modern, Answer: answer}
	var m wire.Message
	if wire.Parse(body, &m) == nil && m.Kind == wire.KindResponse && m.Error.Present() {
		e.Code = m.ErrorCode
		e.Supported = errorSupported(&m)
	}
	return e
}

// errorSupported reads data.supported of an UnsupportedProtocolVersion
// error (nil for other errors, or when absent).
func errorSupported(m *wire.Message) []string {
	if m.ErrorCode != wire.CodeUnsupportedVersion {
		return nil
	}
	data, ok := wire.Field(m.Raw, m.Error, "data")
	if !ok {
		return nil
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	json.Unmarshal(m.Bytes(data), &d)
	return d.Supported
}

// Decide is the one era-detection rule set: what the answer to one
// request says of the peer that gave it.
func Decide(e Evidence) Decision {
	switch e.Answer {
	case AnswerNone:
		return Decision{}
	case AnswerEmpty:
		// A request taken and never answered: no modern server does that.
		return Decision{Era: EraLegacy}
	case AnswerRefused, AnswerNotAllowed:
		return decideRefusal(e)
	}
	switch {
	case e.Modern && e.Method == "server/discover":
		return decideDiscover(e)
	case e.Modern && e.Answer == AnswerError:
		// -32022 listing only 2025 versions: a stateful Go SDK server or
		// a legacy-pinned mcp-go server. Other errors are the request's
		// own business.
		if d := bySupported(e.Supported); e.Code == wire.CodeUnsupportedVersion && d.Era == EraLegacy {
			return d
		}
		return Decision{}
	case e.Modern && e.ResultType == "":
		// A result without resultType is 2025-shaped: a 2026-07-28 result
		// "MUST include resultType", and absent "MUST be treated as
		// complete (legacy servers)" (basic §resultType). A 2025 server
		// that answers a request in the 2026-07-28 envelope (supergateway
		// 4.0.0 does, stateful or not) is no modern server, but the shape
		// of one answer is no verdict on its own.
		return Decision{Era: EraLegacy, Confirm: true}
	case e.Modern:
		return Decision{Era: EraModern, Version: Modern}
	case e.Method == "initialize" && e.Answer == AnswerError:
		// A modern-only server may refuse the 2025 handshake.
		return Decision{Era: EraModern, Confirm: true}
	case e.Method == "initialize":
		// A modern-only server answers even a legacy initialize (the Go
		// SDK with 2025-11-25, then refuses every request carrying it);
		// only a request after it proves the legacy era.
		if IsLegacy(e.ProtocolVersion) {
			return Decision{Era: EraLegacy, Confirm: true}
		}
		return Decision{}
	case e.Answer == AnswerResult:
		return Decision{Era: EraLegacy}
	}
	return Decision{}
}

// decideRefusal judges a transport's refusal (streamable-http §Backward
// Compatibility): "If the body contains a recognized modern JSON-RPC
// error, the server speaks a modern version of MCP"; any other 400/404/405
// to a modern request points to a legacy server, and to a legacy request
// to a modern-only one — weakly, as a gateway may say 404 for reasons of
// its own.
func decideRefusal(e Evidence) Decision {
	if !e.Modern {
		return Decision{Era: EraModern, Confirm: true}
	}
	if e.Code == wire.CodeUnsupportedVersion {
		if d := bySupported(e.Supported); d.Era == EraLegacy || e.Answer == AnswerRefused {
			return d
		}
	}
	// -32601 is modern evidence only for a method a modern server may
	// lack. A modern server cannot lack server/discover ("servers MUST
	// implement this RPC", 2026-07-28 changelog), so -32601 to it comes
	// from a legacy server (supergateway 4.0.0 answers so), which
	// "respond[s] to unknown pre-initialize requests with
	// implementation-defined errors (commonly -32601 or -32602)"
	// (transports §Backward Compatibility).
	if e.Answer == AnswerRefused && recognizedModern(e.Code) &&
		(e.Code != wire.CodeMethodNotFound || e.Method != "server/discover") {
		return Decision{Era: EraModern, Version: Modern}
	}
	return Decision{Era: EraLegacy, Confirm: true}
}

// decideDiscover judges the in-band answer to server/discover. A
// DiscoverResult lists the versions the endpoint serves; a stateful Go SDK
// server implements server/discover but lists only 2025 versions, so the
// list decides, not the method's existence. An error is legacy unless it
// is a modern one.
func decideDiscover(e Evidence) Decision {
	if e.Answer == AnswerResult {
		if v := PickModern(e.Supported); v != "" {
			return Decision{Era: EraModern, Version: v}
		}
		return Decision{Era: EraLegacy}
	}
	switch e.Code {
	case wire.CodeUnsupportedVersion:
		return bySupported(e.Supported)
	case wire.CodeHeaderMismatch, wire.CodeMissingCapability:
		return Decision{Era: EraModern, Version: Modern}
	}
	return Decision{Era: EraLegacy}
}

// recognizedModern lists the JSON-RPC errors only a modern server sends in
// answer to a well-formed modern request.
func recognizedModern(code int) bool {
	switch code {
	case wire.CodeHeaderMismatch, wire.CodeMissingCapability, wire.CodeUnsupportedVersion,
		wire.CodeMethodNotFound, wire.CodeInvalidParams:
		return true
	}
	return false
}

// bySupported judges an UnsupportedProtocolVersion error by the versions
// it lists: a modern error shape, but a list of only 2025 versions proves
// the endpoint has no modern era. No list names the bridge's own version.
func bySupported(supported []string) Decision {
	if v := PickModern(supported); v != "" {
		return Decision{Era: EraModern, Version: v}
	}
	if len(supported) > 0 {
		return Decision{Era: EraLegacy}
	}
	return Decision{Era: EraModern, Version: Modern}
}
