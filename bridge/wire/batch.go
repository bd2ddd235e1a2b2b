package wire

import "bytes"

// A JSON-RPC batch (2025-03-26 only) is an array of messages. The bridge
// never parses it as a whole: it finds the elements' spans and handles
// each as a message of its own, and when it must change some before
// sending the batch on, it writes the array again around the elements'
// original bytes (Rebatch).

// FirstByte returns the first byte of b that is not JSON whitespace (0 if
// none): '[' starts a batch.
func FirstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

// BatchElements returns the spans of the elements of raw, a JSON array
// (FirstByte(raw) == '[').
func BatchElements(raw []byte) ([]Span, error) {
	return Elements(raw, Span{Start: bytes.IndexByte(raw, '['), End: len(raw)})
}

// Rebatch returns the array raw with element i replaced by with[i] where
// that is not nil (the whitespace between elements goes).
func Rebatch(raw []byte, elems []Span, with [][]byte) []byte {
	out := make([]byte, 0, len(raw)+len(elems)*64)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		if with[i] != nil {
			out = append(out, with[i]...)
		} else {
			out = append(out, raw[e.Start:e.End]...)
		}
	}
	return append(out, ']')
}
