package otlptest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// DecodeJSON decodes an ExportTraceServiceRequest (as TracesData) in the OTLP JSON
// encoding: lowerCamelCase keys, trace and span ids in hex ("MUST be
// represented as case-insensitive hex-encoded strings"), enums as
// integers, 64-bit integers as decimal strings or numbers. protojson
// cannot read it (it wants base64 ids). Unknown keys are errors, so that a
// misspelt field fails the test instead of vanishing; it covers the
// fields the bridge sends (string attributes, no events).
func DecodeJSON(b []byte) (*tracepb.TracesData, error) {
	var in struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []jsonKV `json:"attributes"`
			} `json:"resource"`
			SchemaURL  string `json:"schemaUrl"`
			ScopeSpans []struct {
				Scope struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"scope"`
				SchemaURL string     `json:"schemaUrl"`
				Spans     []jsonSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	out := &tracepb.TracesData{}
	for _, rs := range in.ResourceSpans {
		ors := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: kvs(rs.Resource.Attributes)}, SchemaUrl: rs.SchemaURL}
		for _, ss := range rs.ScopeSpans {
			oss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ss.Scope.Name, Version: ss.Scope.Version}, SchemaUrl: ss.SchemaURL}
			for _, s := range ss.Spans {
				os, err := s.proto()
				if err != nil {
					return nil, err
				}
				oss.Spans = append(oss.Spans, os)
			}
			ors.ScopeSpans = append(ors.ScopeSpans, oss)
		}
		out.ResourceSpans = append(out.ResourceSpans, ors)
	}
	return out, nil
}

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string `json:"stringValue"`
	} `json:"value"`
}

func kvs(in []jsonKV) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for _, kv := range in {
		v := &commonpb.AnyValue{}
		if kv.Value.StringValue != nil {
			v.Value = &commonpb.AnyValue_StringValue{StringValue: *kv.Value.StringValue}
		}
		out = append(out, &commonpb.KeyValue{Key: kv.Key, Value: v})
	}
	return out
}

// u64 is a 64-bit integer in JSON: a decimal string (the protobuf JSON
// mapping's form) or a number.
type u64 uint64

func (u *u64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	*u = u64(n)
	return err
}

type jsonSpan struct {
	TraceID           string   `json:"traceId"`
	SpanID            string   `json:"spanId"`
	TraceState        string   `json:"traceState"`
	ParentSpanID      string   `json:"parentSpanId"`
	Flags             uint32   `json:"flags"`
	Name              string   `json:"name"`
	Kind              int32    `json:"kind"`
	StartTimeUnixNano u64      `json:"startTimeUnixNano"`
	EndTimeUnixNano   u64      `json:"endTimeUnixNano"`
	Attributes        []jsonKV `json:"attributes"`
	Links             []struct {
		TraceID    string   `json:"traceId"`
		SpanID     string   `json:"spanId"`
		TraceState string   `json:"traceState"`
		Attributes []jsonKV `json:"attributes"`
		Flags      uint32   `json:"flags"`
	} `json:"links"`
	Status *struct {
		Message string `json:"message"`
		Code    int32  `json:"code"`
	} `json:"status"`
}

func (s *jsonSpan) proto() (*tracepb.Span, error) {
	var err error
	id := func(h string, n int) []byte {
		if h == "" || err != nil {
			return nil
		}
		b, e := hex.DecodeString(h)
		if e == nil && len(b) != n {
			e = fmt.Errorf("id %q is not %d bytes", h, n)
		}
		if e != nil {
			err = e
		}
		return b
	}
	out := &tracepb.Span{
		TraceId: id(s.TraceID, 16), SpanId: id(s.SpanID, 8), TraceState: s.TraceState, ParentSpanId: id(s.ParentSpanID, 8),
		Flags: s.Flags, Name: s.Name, Kind: tracepb.Span_SpanKind(s.Kind),
		StartTimeUnixNano: uint64(s.StartTimeUnixNano), EndTimeUnixNano: uint64(s.EndTimeUnixNano),
		Attributes: kvs(s.Attributes),
	}
	for _, l := range s.Links {
		out.Links = append(out.Links, &tracepb.Span_Link{TraceId: id(l.TraceID, 16), SpanId: id(l.SpanID, 8),
			TraceState: l.TraceState, Attributes: kvs(l.Attributes), Flags: l.Flags})
	}
	if s.Status != nil {
		out.Status = &tracepb.Status{Message: s.Status.Message, Code: tracepb.Status_StatusCode(s.Status.Code)}
	}
	return out, err
}
