package child

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/mcp-bridge/mcp-bridge/bridge/translate"
	"github.com/mcp-bridge/mcp-bridge/bridge/wire"
	"github.com/mcp-bridge/mcp-bridge/stdiohost"
)

// eras is what the child was found to speak (translate.ProbeEras).
type eras struct {
	modern, legacy bool
}

func (e eras) String() string { return translate.Eras{Modern: e.modern, Legacy: e.legacy}.String() }

// A verdict is the era probe's outcome.
type verdict struct {
	eras  eras
	how   string  // what decided it, for the log
	adopt *prober // the sibling that becomes the first child
	// failed says why nothing answered ("" once decided); quick, that
	// no sibling was left running (it could not start, or it exited).
	failed string
	quick  bool
}

// detectEras decides which eras the child speaks. A dual-era client
// "SHOULD probe with server/discover before sending any other request"
// (2026-07-28 stdio §Backward compatibility); because some legacy servers
// exit on any request before initialize, the probe runs on throwaway
// sibling processes, and its verdict holds for every child of this command.
//
// The sibling that answered in the era the bridge will use becomes the
// first shared child (adopted), so the probe costs no extra start-up time.
//
// A slow start is no verdict: the siblings get the whole start timeout,
// and once one has answered, the other gets as long again as that took
// (both started at once) plus a second, not the whole timeout. When
// neither answers, nothing is assumed: the caller tries again.
func detectEras(ctx context.Context, env *Env, o Owner) verdict {
	switch env.Protocol {
	case Modern:
		return verdict{eras: eras{modern: true}, how: "--child-protocol modern"}
	case Legacy:
		return verdict{eras: eras{legacy: true}, how: "--child-protocol legacy"}
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, env.StartTimeout)
	defer cancel()
	// Two siblings at once: one is asked server/discover, the other
	// initialize. A dual-era server picks its era from how the client opens
	// (versioning §Dual-era servers), so each question needs a fresh process.
	var dReply, iReply translate.Reply
	var dErr, iErr error
	var dp, ip *prober
	answered := make(chan struct{}, 2) // a sibling answered (anything)
	var wg sync.WaitGroup
	wg.Go(func() {
		if dp, dErr = newProber(env, o); dp == nil {
			return
		}
		resp, err := dp.ask(ctx, "server/discover", []byte(probeMeta))
		if err != nil {
			// No answer, or the child died. The fallback "MUST NOT be keyed
			// to one specific error code": only a modern answer counts.
			dErr = err
			return
		}
		dReply = translate.DiscoverReply(translate.ResponseEvidence("server/discover", true, resp))
		switch {
		case dReply == translate.ReplyYes:
			if resp.Result.Present() {
				dp.resp = resp
			}
		case resp.Result.Present():
			dErr = errors.New("answered listing no 2026-07-28 version")
		default:
			dErr = errors.New("answered with an error: " + string(resp.Bytes(resp.Error)))
		}
		answered <- struct{}{}
	})
	wg.Go(func() {
		if ip, iErr = newProber(env, o); ip == nil {
			return
		}
		resp, err := ip.ask(ctx, "initialize", env.bridgeInitParams())
		if err != nil {
			iErr = err
			return
		}
		e := translate.ResponseEvidence("initialize", false, resp)
		switch iReply = translate.InitializeReply(e); iReply {
		case translate.ReplyYes:
			ip.resp = resp
		case translate.ReplyOther:
			iErr = errors.New("answered with protocolVersion " + e.ProtocolVersion)
			ip.resp = resp
		default:
			iErr = errors.New("answered with an error: " + string(resp.Bytes(resp.Error)))
		}
		answered <- struct{}{}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-answered:
		took := time.Since(began)
		grace := time.NewTimer(took + translate.ProbeGrace)
		select {
		case <-done:
		case <-grace.C:
			cancel()
			<-done
		}
		grace.Stop()
	}
	// A sibling that died says how: its exit status beats "not running".
	for _, pe := range []struct {
		p   *prober
		err *error
	}{{dp, &dErr}, {ip, &iErr}} {
		if pe.p != nil && errors.Is(*pe.err, ErrGone) {
			if xerr := pe.p.host.Err(); xerr != nil {
				*pe.err = fmt.Errorf("exited at once (%w)", xerr)
			} else {
				*pe.err = errors.New("exited at once")
			}
		}
	}
	found, decided := translate.ProbeEras(dReply, iReply)
	v := verdict{eras: eras{modern: found.Modern, legacy: found.Legacy}}
	modern, legacy := dReply == translate.ReplyYes, iReply == translate.ReplyYes
	switch {
	case modern && dp.resp != nil:
		v.adopt, dp = dp, nil
	case !modern && legacy:
		v.adopt, ip = ip, nil
	}
	quick := true
	for _, p := range []*prober{dp, ip} {
		if p != nil {
			if p.running() {
				quick = false
			}
			p.close()
		}
	}
	switch {
	case modern && legacy:
		v.how = "server/discover and initialize answered"
	case modern:
		v.how = "server/discover answered; initialize: " + errText(iErr)
	case legacy:
		v.how = "initialize answered; server/discover: " + errText(dErr)
	case decided:
		// Both siblings are up and answer, with errors: a --config remote
		// entry whose remote refuses (401, 500, a refused redirect), a
		// server that lacks its configuration. Requests would wait out
		// the start timeout for an answer that already came: each is
		// passed on in its client's era (translate.ProbeEras).
		v.how = "both answered with errors, passed on in each client's era (server/discover: " + errText(dErr) + "; initialize: " + errText(iErr) + ")"
	case errText(dErr) == errText(iErr):
		v.failed, v.quick = errText(dErr), quick // cannot start, typically
	default:
		v.failed = "server/discover: " + errText(dErr) + "; initialize: " + errText(iErr)
		v.quick = quick
	}
	return v
}

func errText(err error) string {
	switch {
	case err == nil:
		return "no answer"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "no answer in time"
	}
	return err.Error()
}

// detect runs the era probe until it decides, retrying with backoff while
// nothing answers; false when ctx ended first. Requests wait meanwhile
// (translating), and /readyz says why it is not ready.
func (s *Shared) detect(ctx context.Context) bool {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(cmp.Or(s.env.RestartBackoff, translate.ProbeRetryMin)),
		backoff.WithMaxInterval(translate.ProbeRetryMax),
		backoff.WithMaxElapsedTime(0),
	)
	said := ""
	for {
		began := time.Now()
		v := detectEras(ctx, s.env, s)
		if ctx.Err() != nil {
			if v.adopt != nil {
				v.adopt.close()
			}
			return false
		}
		if v.failed == "" {
			s.mu.Lock()
			s.unready, s.lastError = 0, "" // earlier rounds' failures are over
			s.mu.Unlock()
			s.eras, s.adopt = v.eras, v.adopt
			if s.adopt != nil {
				s.adopt.keep()
			}
			s.env.Log.Info().Stringer("child_protocol", v.eras).Str("decided_by", v.how).
				Int64("took_ms", time.Since(began).Milliseconds()).Msg("MCP server era detected")
			return true
		}
		reason := "MCP server did not answer the era probe (" + v.failed + ")"
		s.mu.Lock()
		s.lastError = reason + "; retrying"
		if v.quick {
			s.unready++ // gone at once: waiting requests need not wait on
		}
		close(s.exitCh)
		s.exitCh = make(chan struct{})
		s.mu.Unlock()
		wait := b.NextBackOff()
		// Said once at warn; the same reason again only at debug.
		ev := s.env.Log.Warn()
		if reason == said || s.env.Crash.Quiet() {
			ev = s.env.Log.Debug()
		}
		said = reason
		ev.Str("reason", v.failed).Int64("took_ms", time.Since(began).Milliseconds()).
			Int64("retry_in_ms", wait.Milliseconds()).Msg("MCP server era probe failed; retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// bridgeInitParams are the params of the bridge's own initialize to a
// legacy child that serves modern clients. A child shared by every client
// is told of no client capability: a 2025-era server keeps per-connection
// state about its client (server-everything caches the roots it asked for
// and hands them to whoever calls get-roots-list next), and nothing on
// stdio ties a server-to-client request to the call that caused it. Only a
// child dedicated to one principal may ask, through an input round.
func (e *Env) bridgeInitParams() []byte {
	caps := "{}"
	if e.PerPrincipal {
		caps = bridgeCapabilities
	}
	return []byte(`{"protocolVersion":"` + translate.Legacy + `","capabilities":` + caps + `,"clientInfo":{"name":"mcp-bridge","version":"1"}}`)
}

// prober runs a sibling process for the era probe. It is no child of the
// bridge's until adopted: its exit is not logged as one (stdiohost's
// Throwaway).
type prober struct {
	conn *Conn
	host *stdiohost.Host
	resp *wire.Message // its answer, when it may be adopted
}

func newProber(env *Env, o Owner) (*prober, error) {
	log := env.Log.With().Str("child", "shared").Logger()
	conn := NewConn(&env.IDs, o, log)
	opts := env.HostOptions(conn)
	opts.TerminateDelay = 500 * time.Millisecond
	opts.Throwaway = true
	host, err := env.StartProcess(opts)
	if err != nil {
		return nil, err
	}
	conn.attach(host)
	return &prober{conn: conn, host: host}, nil
}

func (p *prober) ask(ctx context.Context, method string, params []byte) (*wire.Message, error) {
	return p.conn.Request(ctx, method, params)
}

// running reports whether the sibling's process is still there.
func (p *prober) running() bool {
	select {
	case <-p.host.Exited():
		return false
	default:
		return true
	}
}

// keep makes the sibling the bridge's child: from now on its exit is one.
func (p *prober) keep() { p.host.Keep() }

func (p *prober) close() {
	p.host.Close()
	p.conn.FailAll("probe done", nil)
}
