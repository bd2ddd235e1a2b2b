package telemetry

import "strings"

// spanContext is a W3C trace context: the ids of a span, its flags and the
// vendors' tracestate (kept as received: the bridge only passes it on).
type spanContext struct {
	traceID [16]byte
	spanID  [8]byte
	flags   byte
	state   string
	remote  bool // parsed from a peer (OTLP's SPAN_FLAGS_CONTEXT_IS_REMOTE)
}

const (
	flagSampled = 0x01
	// flagRandom is Trace Context level 2's "random" bit: the parent says
	// its trace id is random. The bridge passes it on to the span's
	// children; it never sets it on a trace it starts (level 1 peers may
	// refuse a version 00 header with it).
	flagRandom = 0x02

	maxStateLen     = 512
	maxStateMembers = 32
)

func (c *spanContext) valid() bool { return c.traceID != [16]byte{} && c.spanID != [8]byte{} }

func (c *spanContext) sampled() bool { return c.flags&flagSampled != 0 }

// parseTraceparent reads a traceparent field and, when it is valid, the
// tracestate that goes with it.
//
// W3C Trace Context: "version = 2HEXDIGLC"; "Version ff is invalid"; "If
// the version is 00 ... the size of the header MUST be exactly 55
// characters" — for a higher version the vendor "MUST check that the 2
// characters [of flags] are either the end of the string or a dash", the
// rest being a later version's. "trace-id ... All bytes as zero
// (00000000000000000000000000000000) is considered an invalid value";
// likewise the parent-id. HEXDIGLC is lowercase: an uppercase digit makes
// the header invalid. Like the OpenTelemetry SDK, version 00 with a flag
// bit beyond sampled and random is refused, and only those two are kept.
func parseTraceparent(parent, state string) (spanContext, bool) {
	var c spanContext
	if len(parent) < 55 || parent[2] != '-' || parent[35] != '-' || parent[52] != '-' {
		return c, false
	}
	var ver [1]byte
	var fl [1]byte
	if !unhex(ver[:], parent[0:2]) || !unhex(c.traceID[:], parent[3:35]) ||
		!unhex(c.spanID[:], parent[36:52]) || !unhex(fl[:], parent[53:55]) {
		return c, false
	}
	switch {
	case ver[0] == 0xff:
		return c, false
	case ver[0] == 0:
		if len(parent) != 55 || fl[0] > flagSampled|flagRandom {
			return c, false
		}
	case len(parent) > 55 && parent[55] != '-':
		return c, false
	}
	if !c.valid() {
		return c, false
	}
	c.flags = fl[0] & (flagSampled | flagRandom)
	c.remote = true
	if validTracestate(state) {
		c.state = state
	}
	return c, true
}

// unhex decodes lowercase hex s into dst (len(s) == 2*len(dst)).
func unhex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	}
	return 0, false
}

const hexDigits = "0123456789abcdef"

// appendHex appends b in lowercase hex.
func appendHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// traceparentLen is the length of a version 00 traceparent.
const traceparentLen = 55

// appendTraceparent appends c as a version 00 traceparent.
func (c *spanContext) appendTraceparent(out []byte) []byte {
	out = append(out, "00-"...)
	out = appendHex(out, c.traceID[:])
	out = append(out, '-')
	out = appendHex(out, c.spanID[:])
	return append(out, '-', hexDigits[c.flags>>4], hexDigits[c.flags&0xf])
}

// validTracestate reports whether a tracestate is worth passing on. W3C:
// "There can be a maximum of 32 list-members in a list"; a vendor "SHOULD
// propagate at least 512 characters" — the bridge propagates at most that
// many, so a peer cannot make it carry kilobytes on every hop. Each
// list-member is "key = value" per the spec's grammar (simple-key or
// tenant-id@system-id; a value of printable ASCII other than ',' and '='
// not ending in a space); keys are unique. Empty members (",,") are
// allowed. Anything else drops the whole field ("If the vendor failed to
// parse tracestate, it MUST NOT attempt to propagate the invalid
// tracestate" — the traceparent stands regardless).
func validTracestate(s string) bool {
	if s == "" || len(s) > maxStateLen {
		return false
	}
	var keys [maxStateMembers]string
	n := 0
	for s != "" {
		var m string
		m, s, _ = strings.Cut(s, ",")
		if m == "" {
			continue
		}
		k, v, ok := strings.Cut(m, "=")
		if !ok {
			return false
		}
		k, v = strings.TrimLeft(k, " \t"), strings.TrimRight(v, " \t")
		if !stateKey(k) || !stateValue(v) || n == maxStateMembers {
			return false
		}
		for _, seen := range keys[:n] {
			if seen == k {
				return false
			}
		}
		keys[n] = k
		n++
	}
	return n > 0 // nothing to pass on in ",,"
}

// stateKey: simple-key = lcalpha 0*255( lcalpha / DIGIT / "_" / "-"/ "*" /
// "/" ); multi-tenant-key = tenant-id "@" system-id, tenant-id = ( lcalpha
// / DIGIT ) 0*240( ... ), system-id = lcalpha 0*13( ... ).
func stateKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return keyPart(k, false, 255)
	}
	return keyPart(tenant, true, 240) && keyPart(system, false, 13)
}

func keyPart(k string, digitFirst bool, rest int) bool {
	if k == "" || len(k)-1 > rest {
		return false
	}
	if c := k[0]; !(c >= 'a' && c <= 'z' || digitFirst && c >= '0' && c <= '9') {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '*' || c == '/') {
			return false
		}
	}
	return true
}

// stateValue: value = 0*255(chr) nblk-chr; nblk-chr = %x21-2B / %x2D-3C /
// %x3E-7E; chr = %x20 / nblk-chr.
func stateValue(v string) bool {
	if v == "" || len(v) > 256 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == ',' || c == '=' || c == ' ' && i == len(v)-1 {
			return false
		}
	}
	return true
}
