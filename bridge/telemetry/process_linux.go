package telemetry

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"syscall"
)

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ: 100 on
// every Linux architecture; the kernel converts to it whatever its HZ).
const userHZ = 100

// Bounds on what is read of /proc: the stat line is some hundred bytes
// (the command name at most 64); /proc/stat has a line per CPU and a long
// interrupt line before btime.
const (
	maxStatBytes     = 4 << 10
	maxProcStatBytes = 4 << 20
)

func readProcess(c *procCache) (procStat, bool) {
	var st procStat
	raw, err := readBounded("/proc/self/stat", maxStatBytes)
	if err != nil {
		return st, false
	}
	f, ok := statFields(raw)
	if !ok {
		return st, false
	}
	// Fields after the command, from the state (field 3 of proc(5)):
	// utime 14, stime 15, starttime 22, vsize 23, rss 24 (in pages).
	utime, err1 := strconv.ParseUint(string(f[14-3]), 10, 64)
	stime, err2 := strconv.ParseUint(string(f[15-3]), 10, 64)
	if err1 == nil && err2 == nil {
		st.cpu, st.haveCPU = float64(utime+stime)/userHZ, true
	}
	vsize, err1 := strconv.ParseUint(string(f[23-3]), 10, 64)
	rss, err2 := strconv.ParseInt(string(f[24-3]), 10, 64)
	if err1 == nil && err2 == nil {
		st.vsize, st.rss, st.haveMem = float64(vsize), float64(rss)*float64(os.Getpagesize()), true
	}
	c.once.Do(func() {
		ticks, err := strconv.ParseUint(string(f[22-3]), 10, 64)
		if boot, ok := bootTime(); ok && err == nil {
			c.start = float64(boot) + float64(ticks)/userHZ
		}
	})
	if n, ok := countFDs(); ok {
		st.openFDs, st.haveOpenFDs = float64(n), true
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		st.maxFDs, st.haveMaxFDs = float64(lim.Cur), true
	}
	return st, true
}

// statFields splits /proc/self/stat after the command name, which is in
// parentheses and may itself hold spaces and parentheses: the last ')'
// ends it. It wants at least up to field 24 (rss).
func statFields(raw []byte) ([][]byte, bool) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, false
	}
	f := bytes.Fields(raw[i+1:])
	return f, len(f) > 24-3
}

// bootTime is the btime line of /proc/stat: seconds since the epoch.
func bootTime() (uint64, bool) {
	file, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer file.Close()
	r := bufio.NewReaderSize(io.LimitReader(file, maxProcStatBytes), 4<<10)
	lineStart := true
	for {
		chunk, err := r.ReadSlice('\n')
		if lineStart && bytes.HasPrefix(chunk, []byte("btime ")) {
			v, perr := strconv.ParseUint(string(bytes.TrimSpace(chunk[len("btime "):])), 10, 64)
			return v, perr == nil
		}
		// A line longer than the buffer (the interrupt counts) comes in
		// several chunks: only the first starts a line.
		lineStart = err != bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull {
			return 0, false
		}
	}
}

// countFDs counts the entries of /proc/self/fd, a batch at a time.
func countFDs() (int, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(1024)
		n += len(names)
		if err == io.EOF {
			return n, true
		}
		if err != nil {
			return 0, false
		}
	}
}

// readBounded reads at most max bytes of a file.
func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}
