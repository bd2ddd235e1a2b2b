package telemetry

import "sync"

// procCache keeps what does not change over the process's life
// (process_start_time_seconds), read at the first scrape.
type procCache struct {
	once  sync.Once
	start float64 // seconds since the epoch; 0 if unreadable
}

// processFamilies reads the process's metrics for one scrape (the ones the
// standard Prometheus process collector gives that operators use), or as
// many of them as the OS lets us read: see process_linux.go.
func processFamilies(c *procCache) []*family {
	st, ok := readProcess(c)
	if !ok {
		return nil
	}
	var fams []*family
	add := func(name, help string, v float64, have bool) {
		if have {
			fams = append(fams, gaugeFamily(name, help, v))
		}
	}
	if st.haveCPU {
		fams = append(fams, counterFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", st.cpu))
	}
	add("process_resident_memory_bytes", "Resident memory size in bytes.", st.rss, st.haveMem)
	add("process_virtual_memory_bytes", "Virtual memory size in bytes.", st.vsize, st.haveMem)
	add("process_open_fds", "Number of open file descriptors.", st.openFDs, st.haveOpenFDs)
	add("process_max_fds", "Maximum number of open file descriptors.", st.maxFDs, st.haveMaxFDs)
	add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", c.start, c.start > 0)
	return fams
}

// procStat is one reading of the process's state; have* say which parts
// could be read.
type procStat struct {
	cpu, rss, vsize, openFDs, maxFDs          float64
	haveCPU, haveMem, haveOpenFDs, haveMaxFDs bool
}
