package translate

import (
	"testing"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// TestObserve is the lazy detection's table (connect on the host's own
// traffic): which answers are passed on, which settle the era, which are
// held back for a probe, which send the request again in translation.
func TestObserve(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    Evidence
		era  Era
		step Step
	}{
		{"no answer is no evidence", Evidence{Method: "tools/call", Modern: true}, EraUnknown, StepPass},
		{"modern result settles modern", Evidence{Method: "tools/call", Modern: true, Answer: AnswerResult, ResultType: "complete"}, EraModern, StepSettle},
		{"2025-shaped result to a modern request is held", Evidence{Method: "tools/call", Modern: true, Answer: AnswerResult}, EraLegacy, StepHold},
		{"-32022 naming only 2025 switches", Evidence{Method: "tools/call", Modern: true, Answer: AnswerError, Code: wire.CodeUnsupportedVersion, Supported: []string{"2025-11-25"}}, EraLegacy, StepSwitch},
		{"plain 404 to a modern request is held", Evidence{Method: "tools/call", Modern: true, Answer: AnswerRefused}, EraLegacy, StepHold},
		{"modern refusal settles modern", Evidence{Method: "tools/call", Modern: true, Answer: AnswerRefused, Code: wire.CodeHeaderMismatch}, EraModern, StepSettle},
		{"refusal of a legacy request is held", Evidence{Method: "tools/list", Answer: AnswerRefused}, EraModern, StepHold},
		{"legacy initialize error is held", Evidence{Method: "initialize", Answer: AnswerError}, EraModern, StepHold},
		{"legacy initialize result proves nothing yet", Evidence{Method: "initialize", Answer: AnswerResult, ProtocolVersion: "2025-11-25"}, EraLegacy, StepPass},
		{"legacy result settles legacy", Evidence{Method: "tools/list", Answer: AnswerResult}, EraLegacy, StepSettle},
	} {
		d, step := Observe(tt.e)
		if d.Era != tt.era || step != tt.step {
			t.Errorf("%s: %v step %d, want %v step %d", tt.name, d.Era, step, tt.era, tt.step)
		}
	}
	for _, tt := range []struct {
		v      Era
		modern bool
		want   Step
	}{
		{EraUnknown, true, StepPass}, {EraModern, true, StepSettle}, {EraLegacy, true, StepSwitch},
		{EraUnknown, false, StepPass}, {EraLegacy, false, StepSettle}, {EraModern, false, StepSwitch},
	} {
		if got := Settle(tt.v, tt.modern); got != tt.want {
			t.Errorf("Settle(%v, modern %v) = %d, want %d", tt.v, tt.modern, got, tt.want)
		}
	}
}

// TestJudgeProbe: a probe refused with -32022 naming another modern
// version is asked again in it; an answered probe is not.
func TestJudgeProbe(t *testing.T) {
	later := []string{"2027-03-01"}
	d, retry := JudgeProbe(Evidence{Method: "server/discover", Modern: true, Answer: AnswerRefused, Code: wire.CodeUnsupportedVersion, Supported: later}, Modern)
	if d.Era != EraModern || retry != "2027-03-01" {
		t.Errorf("refused naming a later version: %v retry %q", d.Era, retry)
	}
	d, retry = JudgeProbe(Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult, Supported: later, ResultType: "complete"}, Modern)
	if d.Era != EraModern || retry != "" {
		t.Errorf("answered listing a later version: %v retry %q", d.Era, retry)
	}
	if d, retry = JudgeProbe(Evidence{Method: "server/discover", Modern: true, Answer: AnswerEmpty}, Modern); d.Era != EraLegacy || retry != "" {
		t.Errorf("never answered: %v retry %q", d.Era, retry)
	}
}

// TestProbeEras: what the two questions of a stdio probe (server/discover
// and initialize, each of a fresh process) say together.
func TestProbeEras(t *testing.T) {
	for _, tt := range []struct {
		d, i    Reply
		want    Eras
		decided bool
	}{
		{ReplyYes, ReplyYes, Eras{Modern: true, Legacy: true}, true},
		{ReplyYes, ReplyOther, Eras{Modern: true}, true},
		{ReplyRefused, ReplyYes, Eras{Legacy: true}, true},
		{ReplyNone, ReplyYes, Eras{Legacy: true}, true},
		{ReplyRefused, ReplyRefused, Eras{Modern: true, Legacy: true}, true},
		{ReplyRefused, ReplyNone, Eras{}, false},
		{ReplyNone, ReplyNone, Eras{}, false},
		{ReplyRefused, ReplyOther, Eras{}, false},
	} {
		if got, ok := ProbeEras(tt.d, tt.i); got != tt.want || ok != tt.decided {
			t.Errorf("ProbeEras(%d, %d) = %v %v, want %v %v", tt.d, tt.i, got, ok, tt.want, tt.decided)
		}
	}
	if r := DiscoverReply(Evidence{Method: "server/discover", Modern: true, Answer: AnswerResult, Supported: []string{"2025-11-25"}}); r != ReplyRefused {
		t.Errorf("discover listing only 2025: %d, want refused", r)
	}
	if r := InitializeReply(Evidence{Method: "initialize", Answer: AnswerResult, ProtocolVersion: Modern}); r != ReplyOther {
		t.Errorf("initialize answered with a modern version: %d, want other", r)
	}
}
