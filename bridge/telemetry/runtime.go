package telemetry

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// runtimeSamples are read through runtime/metrics, which (unlike
// runtime.ReadMemStats) does not stop the world. The names are the ones
// client_golang's go_memstats_* are defined by.
var runtimeSamples = [...]string{
	"/memory/classes/heap/objects:bytes", // go_memstats_alloc_bytes
	"/memory/classes/heap/unused:bytes",  // + objects: go_memstats_heap_inuse_bytes
	"/memory/classes/total:bytes",        // go_memstats_sys_bytes
}

// runtimeFamilies reads the Go runtime's state for one scrape: the
// metrics operators chart (goroutines, threads, heap, GC pauses, version).
func runtimeFamilies() []*family {
	samples := make([]rtmetrics.Sample, len(runtimeSamples))
	for i, n := range runtimeSamples {
		samples[i].Name = n
	}
	rtmetrics.Read(samples)
	u := func(i int) float64 {
		if samples[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0
		}
		return float64(samples[i].Value.Uint64())
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	// go_gc_duration_seconds is the summary client_golang gives: the
	// stop-the-world pauses' min, quartiles and max over the recent
	// pauses the runtime keeps, their total and the number of GCs.
	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	pauses := &summary{quantiles: []float64{0, 0.25, 0.5, 0.75, 1}, values: make([]float64, 5),
		sum: gc.PauseTotal.Seconds(), count: uint64(gc.NumGC)}
	for i, d := range gc.PauseQuantiles {
		pauses.values[i] = d.Seconds()
	}
	return []*family{
		gaugeFamily("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		gaugeFamily("go_threads", "Number of OS threads created.", float64(threads)),
		gaugeFamily("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use (/memory/classes/heap/objects:bytes).", u(0)),
		gaugeFamily("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use (/memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes).", u(0)+u(1)),
		gaugeFamily("go_memstats_sys_bytes", "Number of bytes obtained from the system (/memory/classes/total:bytes).", u(2)),
		summaryFamily("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", pauses),
		infoFamily("go_info", "Information about the Go environment.", "version", runtime.Version()),
	}
}

// gaugeFamily is a family of one unlabelled gauge, for a scrape.
func gaugeFamily(name, help string, v float64) *family {
	f := newFamily(name, help, kindGauge)
	f.with().g.set(v)
	return f
}

// counterFamily is a family of one unlabelled counter whose value is a
// float (process_cpu_seconds_total), for a scrape.
func counterFamily(name, help string, v float64) *family {
	f := newFamily(name, help, kindCounter)
	f.with().fv = &v
	return f
}

func summaryFamily(name, help string, s *summary) *family {
	f := newFamily(name, help, kindSummary)
	f.with().s = s
	return f
}

// infoFamily is a gauge of value 1 whose label carries the information.
func infoFamily(name, help, label, value string) *family {
	f := newFamily(name, help, kindGauge, label)
	f.with(value).g.set(1)
	return f
}
