package connect

import (
	"github.com/mcp-bridge/mcp-bridge/bridge/remote"
	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
)

// The remote's era decides whether the bridge passes messages through or
// translates them (bridge/remote's era.go: the probe and the verdict
// cached per endpoint). Translation is only needed when host and remote
// speak different eras, so detection happens lazily, on evidence from the
// host's own traffic (detect.go).

// probeTimeout bounds a request of the bridge's own besides the probe
// (modernhost_listen.go): the probe's bound, translate.ProbeTimeout.
const probeTimeout = translate.ProbeTimeout

// verdict is what the bridge knows about the remote's era; the rules that
// reach one live in translate.Decide.
type verdict = translate.Era

const (
	verdictUnknown = translate.EraUnknown
	verdictModern  = translate.EraModern
	verdictLegacy  = translate.EraLegacy
)

// probeResult is what a server/discover probe learnt (remote.Remote.Probe).
type probeResult = remote.ProbeResult

func (b *Bridge) protocol() Protocol {
	if b.cfg.Protocol == "" {
		return ProtocolAuto
	}
	return b.cfg.Protocol
}

// detectable reports whether a pass-through exchange may still reveal that
// the remote speaks the other era.
func (b *Bridge) detectable() bool {
	return b.protocol() == ProtocolAuto && b.passingThrough() && b.remote.Verdict() == verdictUnknown
}
