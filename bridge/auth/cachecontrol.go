package auth

import (
	"strings"
	"time"
)

// maxDeltaSeconds is RFC 9111 §1.2.2's cap: "a cache receiving a
// delta-seconds value greater than the greatest integer it can represent,
// or if any of its subsequent calculations overflows, ... MUST consider
// the value to be 2147483648 (2^31)".
const maxDeltaSeconds = 1 << 31

// parseMaxAge reads the max-age directive of Cache-Control field lines
// (RFC 9111 §5.2): directives are comma-separated, names case-insensitive,
// the argument a token or a quoted string. Only max-age sets a key set's
// lifetime here; no-cache and no-store ask a cache to revalidate each
// use, which a key cache cannot do per request, so they are not read as a
// lifetime. §4.2.1: with several max-age directives "either the first
// occurrence should be used or the response should be considered stale":
// the first is used. ok is false without a valid max-age.
func parseMaxAge(lines []string) (age time.Duration, ok bool) {
	for _, line := range lines {
		for _, d := range strings.Split(line, ",") {
			name, arg, hasArg := strings.Cut(strings.TrimSpace(d), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "max-age") || !hasArg {
				continue
			}
			arg = strings.TrimSpace(arg)
			if len(arg) >= 2 && arg[0] == '"' && arg[len(arg)-1] == '"' {
				arg = arg[1 : len(arg)-1]
			}
			secs, valid := deltaSeconds(arg)
			if !valid {
				return 0, false // a malformed first max-age: no lifetime from it
			}
			return time.Duration(secs) * time.Second, true
		}
	}
	return 0, false
}

// deltaSeconds parses 1*DIGIT, capped at maxDeltaSeconds.
func deltaSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < maxDeltaSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, maxDeltaSeconds), true
}
