//go:build linux

package load

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is one measured load: Concurrency callers in a closed loop until
// Count calls have been started or Duration has passed.
type Phase struct {
	Name        string
	Concurrency int
	Count       int
	Duration    time.Duration // 0: no limit
	CallTimeout time.Duration // 0: 60s
	Spec        Spec
}

// Result is a phase's outcome. Latencies are in milliseconds.
type Result struct {
	Name         string   `json:"name"`
	Concurrency  int      `json:"concurrency"`
	Size         int      `json:"size"`
	Calls        int      `json:"calls"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	Seconds      float64  `json:"seconds"`
	CallsPerSec  float64  `json:"calls_per_sec"`
	P50          float64  `json:"p50_ms"`
	P90          float64  `json:"p90_ms"`
	P99          float64  `json:"p99_ms"`
	Max          float64  `json:"max_ms"`
	Min          float64  `json:"min_ms"`
	MaxInFlight  int      `json:"max_in_flight"`

	ProgressWant int `json:"progress_want,omitempty"`
	ProgressGot  int `json:"progress_got,omitempty"`

	// Filled by the suite when it watches processes.
	CPUSeconds       float64 `json:"cpu_s,omitempty"`
	CPUPer10k        float64 `json:"cpu_s_per_10k,omitempty"`
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
	ServerCPUPer10k  float64 `json:"server_cpu_s_per_10k,omitempty"`
	PeakMem          *Mem    `json:"peak_mem,omitempty"`
}

// Run executes a phase.
func Run(ctx context.Context, c Caller, p Phase) Result {
	if p.Concurrency < 1 {
		p.Concurrency = 1
	}
	if p.CallTimeout == 0 {
		p.CallTimeout = 60 * time.Second
	}
	var (
		next, inflight, maxIn atomic.Int64
		mu                    sync.Mutex
		lats                  = make([]time.Duration, 0, min(p.Count, 1<<20))
		errs                  int
		samples               []string
		progress              int
		wg                    sync.WaitGroup
	)
	start := time.Now()
	var deadline time.Time
	if p.Duration > 0 {
		deadline = start.Add(p.Duration)
	}
	for range p.Concurrency {
		wg.Go(func() {
			local := make([]time.Duration, 0, 256)
			var lerr, lprog int
			var lsamples []string
			for {
				if n := next.Add(1); p.Count > 0 && n > int64(p.Count) {
					break
				}
				if !deadline.IsZero() && time.Now().After(deadline) {
					break
				}
				if ctx.Err() != nil {
					break
				}
				in := inflight.Add(1)
				for {
					m := maxIn.Load()
					if in <= m || maxIn.CompareAndSwap(m, in) {
						break
					}
				}
				cctx, cancel := context.WithTimeout(ctx, p.CallTimeout)
				t0 := time.Now()
				out, err := c.Call(cctx, p.Spec)
				d := time.Since(t0)
				cancel()
				inflight.Add(-1)
				lprog += out.Progress
				if err != nil {
					lerr++
					if len(lsamples) < 3 {
						lsamples = append(lsamples, err.Error())
					}
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			lats = append(lats, local...)
			errs += lerr
			progress += lprog
			for _, s := range lsamples {
				if len(samples) < 5 && !slices.Contains(samples, s) {
					samples = append(samples, s)
				}
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := Result{
		Name:         p.Name,
		Concurrency:  p.Concurrency,
		Size:         p.Spec.Size,
		Calls:        len(lats),
		Errors:       errs,
		ErrorSamples: samples,
		Seconds:      round(elapsed.Seconds(), 4),
		MaxInFlight:  int(maxIn.Load()),
		ProgressGot:  progress,
	}
	if p.Spec.Progress > 0 {
		r.ProgressWant = p.Spec.Progress * (len(lats) + errs)
	}
	if elapsed > 0 {
		r.CallsPerSec = round(float64(len(lats))/elapsed.Seconds(), 1)
	}
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		r.P50 = ms(quantile(lats, 0.50))
		r.P90 = ms(quantile(lats, 0.90))
		r.P99 = ms(quantile(lats, 0.99))
		r.Max = ms(lats[len(lats)-1])
		r.Min = ms(lats[0])
	}
	return r
}

// quantile of sorted durations (nearest rank).
func quantile(s []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return round(float64(d)/1e6, 4) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
