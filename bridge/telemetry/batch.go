package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-bridge/mcp-bridge/bridge/internal/ratelog"
)

// spanExporter sends one batch of ended spans; it returns when the batch
// is delivered, refused or ctx is done. It must not keep the records: the
// batcher releases them to the pool when export returns.
type spanExporter interface {
	export(ctx context.Context, spans []*spanRecord) error
	close()
}

// batcher is the batch span processor: End puts spans in a bounded queue
// without waiting, one goroutine takes them out in batches and exports
// them — when a batch is full or the schedule delay has passed — and
// Shutdown flushes what is left and joins it.
type batcher struct {
	cfg   batchConfig
	exp   spanExporter
	log   zerolog.Logger
	queue chan *spanRecord
	full  chan struct{} // a batch is ready (buffered: 1)

	dropped atomic.Uint64
	dropLog ratelog.Limiter
	failLog ratelog.Limiter

	stop     chan struct{}
	stopOnce sync.Once
	stopped  atomic.Bool
	exited   chan struct{}
	base     context.Context // cancelled when Shutdown's ctx ends first
	cancel   context.CancelFunc
	lastErr  error // the final flush's; read after exited

	// held, if set (tests), is told how many spans a flush of full
	// batches left queued for later.
	held func(queued int)
}

func newBatcher(cfg batchConfig, exp spanExporter, log zerolog.Logger) *batcher {
	b := &batcher{cfg: cfg, exp: exp, log: log,
		queue: make(chan *spanRecord, cfg.queue), full: make(chan struct{}, 1),
		stop: make(chan struct{}), exited: make(chan struct{}),
	}
	b.base, b.cancel = context.WithCancel(context.Background())
	go b.run()
	return b
}

// enqueue hands an ended span to the processor, which owns the record from
// then on (see Op). It never blocks: when the queue is full (the collector
// is slow or down) the span is dropped and counted — spec: "the processor
// ... MUST NOT block" on End.
func (b *batcher) enqueue(o *spanRecord) {
	if b.stopped.Load() {
		o.release()
		return // after Shutdown: nobody would export it
	}
	select {
	case b.queue <- o:
		if len(b.queue) >= b.cfg.maxBatch {
			select {
			case b.full <- struct{}{}:
			default:
			}
		}
	default:
		o.release()
		n := b.dropped.Add(1)
		b.dropLog.Event(&b.log, zerolog.WarnLevel).Uint64("dropped_spans_total", n).Int("queue_size", b.cfg.queue).
			Msg("telemetry: span queue full (the collector is slow or down); dropping spans")
	}
}

func (b *batcher) run() {
	defer close(b.exited)
	defer b.exp.close()
	batch := make([]*spanRecord, 0, b.cfg.maxBatch)
	timer := time.NewTimer(b.cfg.delay)
	defer timer.Stop()
	for {
		select {
		case <-b.stop:
			b.lastErr = b.flush(batch, false)
			return
		case <-b.full:
			// Only full batches: under steady load, draining the queue
			// to empty posted whatever had arrived during the previous
			// post — a few dozen spans a request, each paying a whole
			// HTTP exchange on both sides. The timer sends the rest.
			b.flush(batch, true)
			continue
		case <-timer.C:
		}
		b.flush(batch, false)
		timer.Reset(b.cfg.delay)
	}
}

// flush exports what is queued, in batches of at most maxBatch: all of
// it, or while a whole batch is queued when onlyFull (the spec's
// processor likewise exports when "the queue ... reaches
// maxExportBatchSize" or the scheduled delay has passed).
func (b *batcher) flush(batch []*spanRecord, onlyFull bool) error {
	var errs error
	for {
		if n := len(b.queue); onlyFull && n < b.cfg.maxBatch {
			if b.held != nil {
				b.held(n)
			}
			return errs
		}
		batch = batch[:0]
	fill:
		for len(batch) < b.cfg.maxBatch {
			select {
			case o := <-b.queue:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			return errs
		}
		if err := b.exportOne(batch); err != nil {
			errs = err
		}
		records.put(batch...) // encoded and sent (or given up on): nothing reads them again
		clear(batch)
		if b.base.Err() != nil {
			return errors.Join(errs, b.base.Err())
		}
	}
}

func (b *batcher) exportOne(batch []*spanRecord) error {
	ctx, cancel := context.WithTimeout(b.base, b.cfg.timeout)
	defer cancel()
	err := b.exp.export(ctx, batch)
	if err != nil {
		b.failLog.Event(&b.log, zerolog.WarnLevel).Err(err).Int("spans", len(batch)).Msg("telemetry: exporting spans failed; batch dropped")
	}
	return err
}

// shutdown stops the processor after it exported what was queued, or
// when ctx ends, whichever is first (then the export in flight is
// abandoned). Either way the goroutine has exited when it returns.
func (b *batcher) shutdown(ctx context.Context) error {
	b.stopOnce.Do(func() {
		b.stopped.Store(true)
		close(b.stop)
	})
	select {
	case <-b.exited:
	case <-ctx.Done():
		b.cancel()
		<-b.exited
		return fmt.Errorf("telemetry: flushing spans: %w", ctx.Err())
	}
	b.cancel()
	if b.lastErr != nil {
		return fmt.Errorf("telemetry: flushing spans: %w", b.lastErr)
	}
	return nil
}
