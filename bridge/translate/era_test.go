package translate

import (
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// TestDecide is the one table of era-detection rules: what one request
// and its answer say of the peer. Both faces reach their verdicts through
// it (serve's probe of its child, connect's detection on the remote).
func TestDecide(t *testing.T) {
	legacyOnly := []string{"2025-11-25", "2025-06-18"}
	modern := Decision{Era: EraModern, Version: Modern}
	legacy := Decision{Era: EraLegacy}
	weakLegacy := Decision{Era: EraLegacy, Confirm: true}
	weakModern := Decision{Era: EraModern, Confirm: true}
	for _, tt := range []struct {
		name string
		e    Evidence
		want Decision
	}{
		{"no answer (timeout, outage, 401/403)", Evidence{Method: "server/discover", Modern: true}, Decision{}},
		{"accepted, never answered (202)", Evidence{Method: "server/discover", Modern: true, Answer: AnswerEmpty}, legacy},

		// server/discover answered in band: the version list decides.
		{"discover lists 2026-07-28", Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult, Supported: []string{Modern, "2025-11-25"}, ResultType: "complete"}, modern},
		{"discover lists a later modern version", Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult, Supported: []string{"2027-03-01"}}, Decision{Era: EraModern, Version: "2027-03-01"}},
		{"discover lists only 2025 versions (stateful Go SDK)", Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult, Supported: legacyOnly}, legacy},
		{"discover lists nothing", Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult}, legacy},
		{"discover -32601", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeMethodNotFound}, legacy},
		{"discover code 0 (mcp-go before initialize)", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError}, legacy},
		{"discover -32022 naming a modern version", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion, Supported: []string{"2027-03-01"}}, Decision{Era: EraModern, Version: "2027-03-01"}},
		{"discover -32022 naming only 2025", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion, Supported: legacyOnly}, legacy},
		{"discover -32022 without a list", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion}, modern},
		{"discover -32020", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeHeaderMismatch}, modern},
		{"discover -32021", Evidence{Method: "server/discover", Modern: true, Answer: AnswerError, Code: wire.CodeMissingCapability}, modern},

		// Another modern request answered in band.
		{"modern result with resultType", Evidence{Method: "tools/call", Modern: true, Answer: AnswerResult, ResultType: "complete"}, modern},
		{"modern request, 2025-shaped result (supergateway)", Evidence{Method: "tools/call", Modern: true, Answer: AnswerResult}, weakLegacy},
		{"modern request, -32022 naming only 2025", Evidence{Method: "tools/list", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion, Supported: legacyOnly}, legacy},
		{"modern request, -32022 naming a modern version", Evidence{Method: "tools/list", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion, Supported: []string{Modern}}, Decision{}},
		{"modern request, another error", Evidence{Method: "tools/call", Modern: true, Answer: AnswerError, Code: wire.CodeInvalidParams}, Decision{}},

		// A legacy request answered in band.
		{"initialize answered with a 2025 version", Evidence{Method: "initialize", Answer: AnswerResult, ProtocolVersion: "2025-11-25"}, weakLegacy},
		{"initialize answered with another version", Evidence{Method: "initialize", Answer: AnswerResult, ProtocolVersion: "2027-03-01"}, Decision{}},
		{"initialize refused in band", Evidence{Method: "initialize", Answer: AnswerError, Code: wire.CodeInvalidRequest}, weakModern},
		{"legacy request after the handshake answered", Evidence{Method: "tools/list", Answer: AnswerResult}, legacy},
		{"legacy request, an error", Evidence{Method: "tools/call", Answer: AnswerError, Code: wire.CodeInvalidParams}, Decision{}},

		// Refusals by the transport (HTTP 400/404, 405).
		{"refused -32022 naming a modern version", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused, Code: wire.CodeUnsupportedVersion, Supported: []string{Modern, "2025-11-25"}}, modern},
		{"refused -32022 naming only 2025 (stateful Go SDK)", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused, Code: wire.CodeUnsupportedVersion, Supported: legacyOnly}, legacy},
		{"refused -32020", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused, Code: wire.CodeHeaderMismatch}, modern},
		{"refused -32021", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused, Code: wire.CodeMissingCapability}, modern},
		{"refused -32602", Evidence{Method: "tools/call", Modern: true, Answer: AnswerRefused, Code: wire.CodeInvalidParams}, modern},
		{"refused -32601 to another method", Evidence{Method: "tools/call", Modern: true, Answer: AnswerRefused, Code: wire.CodeMethodNotFound}, modern},
		{"refused -32601 to server/discover (supergateway)", Evidence{Method: "server/discover", Modern: true, Answer: AnswerRefused, Code: wire.CodeMethodNotFound}, weakLegacy},
		{"refused, no JSON-RPC body", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused}, weakLegacy},
		{"refused, a legacy error", Evidence{Method: "tools/list", Modern: true, Answer: AnswerRefused, Code: wire.CodeConnectionClosed}, weakLegacy},
		{"405 whatever the body", Evidence{Method: "tools/list", Modern: true, Answer: AnswerNotAllowed, Code: wire.CodeHeaderMismatch}, weakLegacy},
		{"405 -32022 naming a modern version", Evidence{Method: "tools/list", Modern: true, Answer: AnswerNotAllowed, Code: wire.CodeUnsupportedVersion, Supported: []string{Modern}}, weakLegacy},
		{"405 -32022 naming only 2025", Evidence{Method: "tools/list", Modern: true, Answer: AnswerNotAllowed, Code: wire.CodeUnsupportedVersion, Supported: legacyOnly}, legacy},
		{"legacy initialize refused", Evidence{Method: "initialize", Answer: AnswerRefused}, weakModern},
		{"legacy request 405", Evidence{Method: "notifications/initialized", Answer: AnswerNotAllowed}, weakModern},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.e); got != tt.want {
				t.Errorf("Decide(%+v) = %+v, want %+v", tt.e, got, tt.want)
			}
		})
	}
}

// The evidence readers take what Decide needs from a response or a
// refusal's body, and nothing from an error that names no versions.
func TestEvidenceReaders(t *testing.T) {
	parse := func(s string) *wire.Message {
		var m wire.Message
		if err := wire.Parse([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	e := ResponseEvidence("server/discover", true, parse(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2025-11-25"]}}`))
	if e.Answer != AnswerResult || e.ResultType != "complete" || len(e.Supported) != 1 || e.Supported[0] != "2025-11-25" {
		t.Errorf("discover result: %+v", e)
	}
	e = ResponseEvidence("initialize", false, parse(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`))
	if e.Answer != AnswerResult || e.ProtocolVersion != "2025-06-18" {
		t.Errorf("initialize result: %+v", e)
	}
	e = ResponseEvidence("tools/list", true, parse(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"supported":["2025-11-25"]}}}`))
	if e.Answer != AnswerError || e.Code != wire.CodeUnsupportedVersion || len(e.Supported) != 1 {
		t.Errorf("-32022: %+v", e)
	}
	e = ResponseEvidence("tools/list", true, parse(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x","data":{"supported":["2025-11-25"]}}}`))
	if e.Supported != nil {
		t.Errorf("-32602 read as naming versions: %+v", e)
	}
	e = RefusalEvidence("tools/list", true, AnswerRefused, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"Header mismatch"}}`))
	if e.Answer != AnswerRefused || e.Code != wire.CodeHeaderMismatch {
		t.Errorf("refusal with a JSON-RPC body: %+v", e)
	}
	e = RefusalEvidence("tools/list", true, AnswerRefused, []byte("Bad Request: Server not initialized"))
	if e.Code != 0 || e.Supported != nil {
		t.Errorf("refusal with a text body: %+v", e)
	}
}
