package telemetry

import (
	"encoding/json"
	"errors"
	"strconv"
)

// partialSuccess is what a collector says when it accepted a request but
// not every span in it. OTLP: "the server MUST respond with HTTP 200 OK"
// and fill partial_success; "the client MUST NOT retry the request" — the
// bridge logs it. ExportTraceServiceResponse: partial_success = 1;
// ExportTracePartialSuccess: rejected_spans = 1 (int64), error_message = 2.
type partialSuccess struct {
	rejected int64
	msg      string
}

var errBadResponse = errors.New("telemetry: unreadable collector response")

// parseProtoResponse reads an ExportTraceServiceResponse, skipping fields
// it does not know (a newer collector may add some).
func parseProtoResponse(b []byte) (partialSuccess, error) {
	var ps partialSuccess
	err := eachField(b, func(field int, v uint64, sub []byte) error {
		if field != 1 || sub == nil {
			return nil
		}
		return eachField(sub, func(field int, v uint64, s []byte) error {
			switch {
			case field == 1 && s == nil:
				ps.rejected = int64(v)
			case field == 2 && s != nil:
				ps.msg = string(s)
			}
			return nil
		})
	})
	return ps, err
}

// eachField calls f for each field of a protobuf message: v for varint
// and fixed fields, sub for length-delimited ones (non-nil, maybe empty).
func eachField(b []byte, f func(field int, v uint64, sub []byte) error) error {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 || key>>3 == 0 || key>>3 > 1<<31-1 { // as protowire.ConsumeTag
			return errBadResponse
		}
		b = b[n:]
		field, v, sub := int(key>>3), uint64(0), []byte(nil)
		switch key & 7 {
		case wireVarint:
			if v, n = uvarint(b); n <= 0 {
				return errBadResponse
			}
			b = b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return errBadResponse
			}
			for i := 7; i >= 0; i-- {
				v = v<<8 | uint64(b[i])
			}
			b = b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return errBadResponse
			}
			v = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
			b = b[4:]
		case wireBytes:
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errBadResponse
			}
			sub, b = b[n:n+int(l)], b[n+int(l):]
			if sub == nil {
				sub = []byte{}
			}
		default: // groups: not in OTLP
			return errBadResponse
		}
		if err := f(field, v, sub); err != nil {
			return err
		}
	}
	return nil
}

// uvarint decodes a varint of at most 10 bytes (n <= 0: malformed).
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// parseJSONResponse reads the JSON form: {"partialSuccess":
// {"rejectedSpans": "3", "errorMessage": "…"}} (an int64 may come as a
// string or a number).
func parseJSONResponse(b []byte) (partialSuccess, error) {
	var r struct {
		PartialSuccess *struct {
			RejectedSpans json.RawMessage `json:"rejectedSpans"`
			ErrorMessage  string          `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if len(b) == 0 {
		return partialSuccess{}, nil
	}
	if err := json.Unmarshal(b, &r); err != nil || r.PartialSuccess == nil {
		if err != nil {
			return partialSuccess{}, errBadResponse
		}
		return partialSuccess{}, nil
	}
	ps := partialSuccess{msg: r.PartialSuccess.ErrorMessage}
	if raw := r.PartialSuccess.RejectedSpans; len(raw) > 0 && string(raw) != "null" {
		s := string(raw)
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return partialSuccess{}, errBadResponse
		}
		ps.rejected = n
	}
	return ps, nil
}
