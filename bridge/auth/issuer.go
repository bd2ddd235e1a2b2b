package auth

import (
	"context"
	"fmt"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The key cache's timing. A request never waits for a fetch when a cached
// key fits its token; when none does (first use, a rotation, a set past
// KeyMaxStale) it waits at most keyWait and then gets 503 with
// Retry-After, while the fetch goes on in the background.
const (
	keyWait = 2 * time.Second
	// keyFetchGap is the least time from the end of one fetch of an
	// issuer's keys to the start of the next, whatever prompts it: a storm
	// of tokens with made-up key ids costs the issuer one fetch a second.
	keyFetchGap = time.Second
	// failureBackoff is the wait after a failed fetch, counted from the
	// attempt's end (so that it applies even to an attempt that hung for
	// its whole timeout), doubled for each failure in a row up to
	// maxFailureBackoff.
	failureBackoff    = 5 * time.Second
	maxFailureBackoff = time.Minute
	// maxAbsentKids bounds the remembered key ids a fetched set lacked.
	maxAbsentKids = 1024
)

// An issuer caches one authorization server's metadata and signing keys.
//
// Fetches run in one background goroutine per issuer at a time (refresh),
// never on a request's own: a request asks for a fetch that starts after
// some time (demand) and waits for an attempt to end, at most keyWait.
type issuer struct {
	s  *Server
	id string

	mu      sync.Mutex
	jwksURI string
	keys    []jose.JSONWebKey
	okStart time.Time // when the last successful fetch started; zero: never
	expires time.Time // the cached set's lifetime ends (then: stale)

	// The last attempt that ended, and the failures in a row up to it.
	lastStart, lastEnd time.Time
	failures           int

	// The demand: a fetch that starts after wantAfter is wanted, last
	// asked for at askedAt. running: refresh is running (fetching or
	// waiting for its turn); fetching: an attempt is under way.
	wantAfter, askedAt time.Time
	running, fetching  bool
	done               chan struct{} // closed (and replaced) when an attempt ends

	// absent: key ids a fetched set lacked, and when that fetch started.
	absent map[string]time.Time
}

func newIssuer(s *Server, id string) *issuer {
	return &issuer{s: s, id: id, done: make(chan struct{}), absent: map[string]time.Time{}}
}

// keysFor returns the issuer's keys that may have signed a token whose
// header names kid and alg.
//
// A token whose key is cached is never held up: past the set's lifetime
// (but within KeyMaxStale) the cached keys still answer while a refresh
// runs in the background. A kid the cached set lacks (a rotation) waits
// for a fetch that starts after the token arrived: if that set lacks it
// too the token is refused (401), as an honest issuer publishes a key
// before it signs with it; if no such fetch ends within keyWait (the
// issuer hangs, or fetches are rate-limited) the answer is 503 with
// Retry-After, never 401: the keys may just be stale.
func (is *issuer) keysFor(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	arrival := time.Now()
	var timeout <-chan time.Time
	for {
		is.mu.Lock()
		ks, wait, err := is.lookup(arrival, kid, alg)
		is.mu.Unlock()
		if wait == nil {
			return ks, err
		}
		if timeout == nil {
			t := time.NewTimer(keyWait - time.Since(arrival))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-wait:
		case <-timeout:
			is.mu.Lock()
			after := is.retryIn(time.Now())
			is.mu.Unlock()
			return nil, unavailableFor(after, fmt.Errorf("no key set from %s within %v", is.id, keyWait))
		case <-ctx.Done():
			return nil, unavailableFor(time.Second, ctx.Err())
		}
	}
}

// lookup decides for a token that arrived at arrival (is.mu held): keys,
// or an error, or a channel to wait on before deciding again.
func (is *issuer) lookup(arrival time.Time, kid, alg string) ([]jose.JSONWebKey, <-chan struct{}, error) {
	now := time.Now()
	usable := !is.okStart.IsZero() && now.Before(is.expires.Add(is.s.cfg.keyMaxStale()))
	if usable {
		if ks := matchKeys(is.keys, kid, alg); len(ks) > 0 {
			if !now.Before(is.expires) {
				is.demand(is.expires, now) // stale: used while a refresh runs
			}
			return ks, nil, nil
		}
		if t, ok := is.absent[kid]; ok && now.Sub(t) < is.s.cfg.refetchInterval() {
			return nil, nil, ErrUnknownKey // this kid was looked for lately
		}
		if !is.okStart.Before(arrival) {
			is.rememberAbsent(kid, is.okStart)
			return nil, nil, ErrUnknownKey
		}
	}
	if is.failures > 0 && !is.lastStart.Before(arrival) {
		// An attempt that started after the token came has failed.
		return nil, nil, unavailableFor(is.retryIn(now), fmt.Errorf("no signing keys from %s (the log says why)", is.id))
	}
	if !is.fetching && is.nextAllowed().After(arrival.Add(keyWait)) {
		// Backing off after failures: no fetch would start in time.
		return nil, nil, unavailableFor(is.retryIn(now), fmt.Errorf("no signing keys from %s (the log says why)", is.id))
	}
	if !is.demand(arrival, now) {
		return nil, nil, unavailableFor(0, fmt.Errorf("no signing keys from %s: the server is closed", is.id))
	}
	return nil, is.done, nil
}

// demand asks for a fetch that starts after after (is.mu held), starting
// refresh if it is not running. It reports false once the Server is
// closed.
func (is *issuer) demand(after, at time.Time) bool {
	if after.After(is.wantAfter) {
		is.wantAfter = after
	}
	if at.After(is.askedAt) {
		is.askedAt = at
	}
	if is.running {
		return true
	}
	if !is.s.background(is.refresh) {
		return false
	}
	is.running = true
	return true
}

// wanted reports whether a fetch is still wanted (is.mu held): none that
// started after wantAfter succeeded, and someone asked since the last
// attempt started (a failed attempt is retried only while requests
// still want keys).
func (is *issuer) wanted() bool {
	return is.okStart.Before(is.wantAfter) && is.lastStart.Before(is.askedAt)
}

// nextAllowed is when the next fetch may start (is.mu held).
func (is *issuer) nextAllowed() time.Time {
	if is.lastEnd.IsZero() {
		return time.Time{}
	}
	gap := keyFetchGap
	switch {
	case is.s.cfg.refetchInterval() == 0:
		gap = 0 // tests: no waits
	case is.failures > 0:
		gap = min(failureBackoff<<min(is.failures-1, 8), maxFailureBackoff)
	}
	return is.lastEnd.Add(gap)
}

// retryIn is a 503's Retry-After for a token that needs keys now.
func (is *issuer) retryIn(now time.Time) time.Duration {
	if is.fetching {
		return time.Second
	}
	return max(is.nextAllowed().Sub(now), time.Second)
}

func (is *issuer) rememberAbsent(kid string, at time.Time) {
	if kid == "" {
		return
	}
	if len(is.absent) >= maxAbsentKids {
		for k, t := range is.absent {
			if at.Sub(t) >= is.s.cfg.refetchInterval() || len(is.absent) >= maxAbsentKids {
				delete(is.absent, k)
			}
		}
	}
	is.absent[kid] = at
}

// refresh fetches while a fetch is wanted, each attempt in its turn
// (nextAllowed), on a goroutine the Server owns. It does not run under
// any request's context: requests wait for it, and one that leaves must
// not cut it short for the others.
func (is *issuer) refresh() {
	for {
		is.mu.Lock()
		if !is.wanted() || is.s.ctx.Err() != nil {
			is.running = false
			is.mu.Unlock()
			return
		}
		wait := time.Until(is.nextAllowed())
		start := time.Now()
		is.fetching = wait <= 0
		is.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-is.s.ctx.Done():
				t.Stop()
			}
			continue
		}
		keys, jwksURI, lifetime, err := is.load()
		is.record(start, keys, jwksURI, lifetime, err)
	}
}

// record ends an attempt that started at start and wakes its waiters.
func (is *issuer) record(start time.Time, keys []jose.JSONWebKey, jwksURI string, lifetime time.Duration, err error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	end := time.Now()
	is.fetching = false
	is.lastStart, is.lastEnd = start, end
	close(is.done)
	is.done = make(chan struct{})
	if err != nil {
		is.failures++
		// The metadata is read again next time: the issuer may have
		// moved its key set.
		is.jwksURI = ""
		if is.s.ctx.Err() != nil {
			return // cut short by Close
		}
		is.s.log.Warn().Err(err).Str("issuer", is.id).Int("failures", is.failures).
			Int64("took_ms", end.Sub(start).Milliseconds()).Bool("cached_keys", !is.okStart.IsZero()).
			Msg("cannot fetch the issuer's signing keys")
		return
	}
	is.failures = 0
	is.jwksURI, is.keys, is.okStart, is.expires = jwksURI, keys, start, end.Add(lifetime)
	is.s.log.Debug().Str("issuer", is.id).Int("keys", len(keys)).Int64("lifetime_ms", lifetime.Milliseconds()).
		Msg("fetched the issuer's signing keys")
}
