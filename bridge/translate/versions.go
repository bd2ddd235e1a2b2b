package translate

import (
	"encoding/json"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
)

// Modern is the 2026-07-28 revision, the first with per-request metadata
// instead of a handshake, and the one the bridge speaks to a modern peer.
const Modern = "2026-07-28"

// Legacy is the newest handshake-era revision: what the bridge answers or
// offers in a handshake when it has no better choice.
const Legacy = "2025-11-25"

// legacyVersions are the handshake-era revisions, newest first. The bridge
// speaks each in a handshake of its own: 2024-11-05 is the era of the
// HTTP+SSE transport (serve's /sse), whose clients may ask for nothing
// newer.
var legacyVersions = [...]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// IsModern reports whether v names a per-request-metadata revision.
// Protocol versions are dates, so they compare as strings.
func IsModern(v string) bool { return v >= Modern }

// IsLegacy reports whether v is a handshake-era revision the bridge knows.
func IsLegacy(v string) bool { return slices.Contains(legacyVersions[:], v) }

// SpeaksLegacy reports whether the bridge can hold a handshake at v: "If
// the server supports the requested protocol version, it MUST respond with
// the same version" (2025-11-25 lifecycle §Version Negotiation).
func SpeaksLegacy(v string) bool { return slices.Contains(legacyVersions[:], v) }

// NegotiateLegacy picks the version a legacy peer gets: its own when the
// bridge speaks it, else the newest ("Otherwise, the server MUST respond
// with another protocol version it supports").
func NegotiateLegacy(requested string) string {
	if SpeaksLegacy(requested) {
		return requested
	}
	return Legacy
}

// PickModern chooses the modern version to speak from a supported list:
// the bridge's own, else the oldest modern one offered; "" if none is.
func PickModern(versions []string) string {
	if slices.Contains(versions, Modern) {
		return Modern
	}
	best := ""
	for _, v := range versions {
		if IsModern(v) && (best == "" || v < best) {
			best = v
		}
	}
	return best
}

// SupportedVersions reads the supportedVersions list of a DiscoverResult
// response (nil when absent or malformed).
func SupportedVersions(m *wire.Message) []string {
	var versions []string
	if sp, ok := wire.Field(m.Raw, m.Result, "supportedVersions"); ok {
		json.Unmarshal(m.Bytes(sp), &versions)
	}
	return versions
}

// AllowsBatch reports whether revision v has JSON-RPC batches: only
// 2025-03-26 does (2025-06-18 changelog: "Remove support for JSON-RPC
// batching").
func AllowsBatch(v string) bool { return v == "2025-03-26" }

// ExpectsPriming reports whether a legacy session of version v expects a
// priming event (an id and empty data) first on each SSE stream: 2025-11-25
// introduced it (SEP-1699), and earlier clients may not tolerate an event
// without data.
func ExpectsPriming(v string) bool { return v >= Legacy }
