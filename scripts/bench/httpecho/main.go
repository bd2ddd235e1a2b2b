// Command httpecho is the benchmark's Streamable HTTP MCP server, hand
// written on net/http with the same echo semantics as scripts/bench/echo.
//
// A POST with the 2026-07-28 _meta envelope is served statelessly. A 2025
// initialize creates a session (Mcp-Session-Id); later 2025 requests must
// carry it (404 for an unknown one). A request that asks for progress is
// answered with an SSE stream (each event flushed), every other one with a
// single application/json body. GET is 405 (no standalone stream), DELETE
// ends a session. It is also the "bare net/http handler" floor of the serve
// benchmarks and the upstream of the connect benchmarks.
//
//	httpecho [-listen 127.0.0.1:0] [-mode both|modern|legacy] [-addr-file F]
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-bridge/mcp-bridge/scripts/bench/internal/echoproto"
)

type server struct {
	mode     string
	sessions sync.Map // id -> struct{}
	pool     sync.Pool
}

type scratch struct {
	req  echoproto.Request
	body bytes.Buffer
	out  []byte
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	mode := flag.String("mode", "both", "eras served: both, modern or legacy")
	addrFile := flag.String("addr-file", "", "write the bound host:port to this file once listening")
	flag.Parse()
	s := &server{mode: *mode}
	s.pool.New = func() any { return new(scratch) }

	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.serveMCP)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	// An OTLP/HTTP trace sink for the telemetry targets: the spans are
	// read and dropped; an empty body is an empty ExportTraceServiceResponse.
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "httpecho: serving http://%s/mcp (mode %s)\n", ln.Addr(), *mode)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

func (s *server) serveMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		id := r.Header.Get("Mcp-Session-Id")
		if _, ok := s.sessions.LoadAndDelete(id); !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	sc := s.pool.Get().(*scratch)
	defer func() {
		if sc.body.Cap() > 1<<20 {
			sc.body = bytes.Buffer{}
		}
		if cap(sc.out) > 1<<20 {
			sc.out = nil
		}
		s.pool.Put(sc)
	}()
	sc.body.Reset()
	if _, err := sc.body.ReadFrom(http.MaxBytesReader(w, r.Body, 64<<20)); err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &sc.req
	if err := req.Parse(sc.body.Bytes()); err != nil {
		writeJSON(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`), nil)
		return
	}
	modern := req.Modern()
	switch {
	case modern && s.mode == "legacy", !modern && s.mode == "modern":
		writeJSON(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version"}}`), nil)
		return
	case !modern && req.Method == "initialize":
		var b [16]byte
		rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		s.sessions.Store(id, struct{}{})
		w.Header().Set("Mcp-Session-Id", id)
	case !modern:
		id := r.Header.Get("Mcp-Session-Id")
		if id == "" {
			writeJSON(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: missing Mcp-Session-Id"}}`), nil)
			return
		}
		if _, ok := s.sessions.Load(id); !ok {
			writeJSON(w, http.StatusNotFound, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`), nil)
			return
		}
	}
	if !req.IsRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if req.WantsProgress() {
		s.stream(w, r, req, sc)
		return
	}
	if req.IsEcho() {
		head, tail := req.EchoParts(sc.out[:0])
		sc.out = head
		writeJSON(w, http.StatusOK, head, tail)
		return
	}
	sc.out, _ = req.Answer(sc.out[:0])
	writeJSON(w, http.StatusOK, sc.out, nil)
}

// writeJSON writes body+more (more, if large, goes straight to the
// connection without being copied into a joined buffer).
func writeJSON(w http.ResponseWriter, status int, body, more []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+len(more)))
	w.WriteHeader(status)
	w.Write(body)
	if len(more) > 0 {
		w.Write(more)
	}
}

// stream sends the progress notifications and then the result as SSE
// events, flushing each.
func (s *server) stream(w http.ResponseWriter, r *http.Request, req *echoproto.Request, sc *scratch) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	d := req.Delay()
	event := func(msg []byte) bool {
		buf := make([]byte, 0, len(msg)+32)
		buf = append(append(append(buf, "event: message\ndata: "...), msg...), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for i := 1; i <= req.Params.Arguments.Progress; i++ {
		if d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		sc.out = req.Progress(sc.out[:0], i)
		if !event(sc.out) {
			return
		}
	}
	if req.IsEcho() {
		head, tail := req.EchoParts(sc.out[:0])
		sc.out = head
		buf := make([]byte, 0, len(head)+len(tail)+32)
		buf = append(append(append(append(buf, "event: message\ndata: "...), head...), tail...), "\n\n"...)
		w.Write(buf)
		rc.Flush()
		return
	}
	sc.out, _ = req.Answer(sc.out[:0])
	event(sc.out)
}
