package translate

import "time"

// The era-detection machine around Decide, written once for both faces:
// when an answer is acted on, when it is held back for a probe, what a
// probe's outcome means, and the one set of timeouts. A face owns only its
// transport: how it sends a probe (connect POSTs server/discover; serve
// asks fresh sibling processes server/discover and initialize) and how
// what came back is read as Evidence.

// ProbeTimeout bounds one server/discover probe over HTTP; running out of
// it is an outage, not era evidence. (A stdio child's probe is bounded by
// its start timeout instead: a slow start is no verdict either.)
const ProbeTimeout = 30 * time.Second

// ProbeGrace is how long a probe that asks two fresh peers at once waits
// for the second after the first answered, beyond as long again as the
// first took (both started together): a slow start is no verdict, but
// one that answered need not wait out the whole timeout for the other.
const ProbeGrace = time.Second

// ProbeRetryMin and ProbeRetryMax pace a probe repeated while nothing
// answers: quick at first, never giving up.
const (
	ProbeRetryMin = 250 * time.Millisecond
	ProbeRetryMax = 30 * time.Second
)

// ProbeParams are the params of a server/discover probe asked in version,
// in the 2026-07-28 envelope: the capabilities and identity of the client
// the bridge speaks for (caps, info; nil for none), and no log level.
func ProbeParams(version string, caps, info []byte) []byte {
	return append(append([]byte(`{"_meta":{`), EnvelopeFields(version, caps, info, "")...), "}}"...)
}

// Step is what a face does with the answer to a request of its own
// sender (not a probe) while the peer's era is not yet known.
type Step int8

const (
	// StepPass passes the answer on: it proves nothing yet.
	StepPass Step = iota
	// StepSettle passes the answer on and records the peer's era.
	StepSettle
	// StepHold holds the answer back and probes: weak evidence that the
	// peer lacks the sender's era. The probe's era then decides (Settle).
	StepHold
	// StepSwitch drops the answer: the peer lacks the sender's era, and
	// the request goes again in translation.
	StepSwitch
)

// Observe is the lazy detection of one answer to a request sent in the
// modern envelope or not (e.Modern): translate.Decide reads it, weak
// evidence against the sender's era is held back while a probe asks the
// peer, weak evidence for it proves nothing yet.
func Observe(e Evidence) (Decision, Step) {
	d := Decide(e)
	switch {
	case d.Confirm && d.Era != eraOf(e.Modern):
		return d, StepHold
	case d.Confirm:
		return d, StepPass
	case d.Era == EraLegacy && e.Modern:
		return d, StepSwitch
	case d.Era != EraUnknown:
		return d, StepSettle
	}
	return d, StepPass
}

// Settle is what a probe's verdict v means for a request sent in the
// modern envelope or not that was held back (or refused) meanwhile:
// StepSwitch when the peer lacks that era, StepSettle when it has it,
// StepPass when the probe got no answer (nothing is cached then).
func Settle(v Era, modern bool) Step {
	switch v {
	case EraUnknown:
		return StepPass
	case eraOf(modern):
		return StepSettle
	}
	return StepSwitch
}

func eraOf(modern bool) Era {
	if modern {
		return EraModern
	}
	return EraLegacy
}

// JudgeProbe reads the answer to a server/discover probe asked in version:
// its decision, and the modern version to ask again in (once) when the
// peer named another one without serving the probe: "the client SHOULD
// select a mutually supported version from the supported list and retry"
// (versioning §Protocol Version Negotiation).
func JudgeProbe(e Evidence, version string) (d Decision, retryWith string) {
	d = Decide(e)
	if d.Era == EraModern && d.Version != version && e.Answer != AnswerResult {
		return d, d.Version
	}
	return d, ""
}

// Eras is what a peer was found to speak by a probe that asks both
// questions, each of a fresh peer (a dual-era server picks its era from
// how the client opens, versioning §Dual-era servers).
type Eras struct {
	Modern, Legacy bool
}

func (e Eras) String() string {
	switch {
	case e.Modern && e.Legacy:
		return "dual-era"
	case e.Modern:
		return "2026-07-28 only"
	default:
		return "legacy only"
	}
}

// Reply is how a peer asked one probe question replied.
type Reply int8

const (
	ReplyNone    Reply = iota // no answer (in time), or the peer died
	ReplyYes                  // answered in the era asked
	ReplyOther                // answered, but not in the era asked
	ReplyRefused              // answered with an error, or with a DiscoverResult listing no modern version
)

// DiscoverReply reads the answer to server/discover asked of a fresh peer.
func DiscoverReply(e Evidence) Reply {
	switch {
	case Decide(e).Era == EraModern:
		return ReplyYes
	case e.Answer == AnswerResult || e.Answer == AnswerError:
		// A stateful Go SDK server lists only 2025 versions.
		return ReplyRefused
	}
	return ReplyNone
}

// InitializeReply reads the answer to a 2025 initialize asked of a fresh
// peer. A legacy answer to initialize is weak evidence on its own (a
// modern-only server may answer it too); the server/discover question
// beside it is its confirmation.
func InitializeReply(e Evidence) Reply {
	switch {
	case Decide(e).Era == EraLegacy:
		return ReplyYes
	case e.Answer == AnswerResult:
		return ReplyOther
	case e.Answer == AnswerError:
		return ReplyRefused
	}
	return ReplyNone
}

// ProbeEras is the verdict of the two questions; decided is false when
// neither gave one (the probe is repeated). Two refusals name no era, but
// they are no reason to hold requests back either (a --config remote that
// refuses, a server that lacks its configuration): each client's request
// is passed on in its own era, as to a dual-era server, and gets the
// peer's own answer.
func ProbeEras(discover, initialize Reply) (e Eras, decided bool) {
	e = Eras{Modern: discover == ReplyYes, Legacy: initialize == ReplyYes}
	switch {
	case e.Modern || e.Legacy:
		return e, true
	case discover == ReplyRefused && initialize == ReplyRefused:
		return Eras{Modern: true, Legacy: true}, true
	}
	return e, false
}
