package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxDocument bounds every document read from an authorization server
// (metadata, key set, introspection answer): a hostile or broken issuer
// cannot make the bridge buffer more.
const maxDocument = 1 << 20

// fetchTimeout bounds each fetch, whatever the HTTP client's own timeout.
const fetchTimeout = 10 * time.Second

// A headerSink is a document that wants its response's header (a key
// set: its Cache-Control).
type headerSink interface{ setHeader(http.Header) }

// getJSON fetches u into v. found is false on 404/410, so discovery can go
// on with the next well-known location.
func (s *Server) getJSON(ctx context.Context, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	return s.do(req, v)
}

func (s *Server) do(req *http.Request, v any) (found bool, err error) {
	ctx, cancel := context.WithTimeout(req.Context(), fetchTimeout)
	defer cancel()
	resp, err := s.client.Do(req.WithContext(ctx))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s %s: HTTP %d", req.Method, req.URL.Redacted(), resp.StatusCode)
	}
	if hs, ok := v.(headerSink); ok {
		hs.setHeader(resp.Header)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return false, err
	}
	if len(body) > maxDocument {
		return false, fmt.Errorf("%s %s: document larger than %d bytes", req.Method, req.URL.Redacted(), maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return true, nil
}
