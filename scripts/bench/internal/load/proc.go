//go:build linux

// The benchmark suite reads CPU time and RSS from /proc and signals process
// groups: it is Linux only, like the machines its results describe (its
// commands loadgen and report are tagged likewise).

package load

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a process the load generator started, in its own process group.
type Proc struct {
	Cmd     *exec.Cmd
	Started time.Time
	exited  chan struct{}
	log     *os.File
}

// StartProc starts argv (stdin /dev/null; stdout and stderr to logPath, or
// discarded) in a new process group.
func StartProc(argv, env []string, logPath string) (*Proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return startProc(cmd, logPath, true)
}

func startProc(cmd *exec.Cmd, logPath string, stdout bool) (*Proc, error) {
	var lf *os.File
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		lf = f
		cmd.Stderr = f
		if stdout {
			cmd.Stdout = f
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Proc{Cmd: cmd, exited: make(chan struct{}), log: lf}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		if lf != nil {
			lf.Close()
		}
		return nil, err
	}
	track(p)
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Wait waits up to d for the process to end by itself.
func (p *Proc) Wait(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop ends the process and everything it started: SIGTERM to its process
// group, then after grace SIGKILL to the group and to every descendant that
// left it (mcp-bridge starts each child in a group of its own).
func (p *Proc) Stop(grace time.Duration) error {
	defer untrack(p)
	defer func() {
		if p.log != nil {
			p.log.Close()
		}
	}()
	if p.Exited() {
		return nil
	}
	tree := Tree(p.Pid())
	syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	syscall.Kill(-p.Pid(), syscall.SIGKILL)
	for _, pid := range tree {
		if pid != p.Pid() {
			if pgid, err := syscall.Getpgid(pid); err == nil {
				if pgid == pid {
					syscall.Kill(-pid, syscall.SIGKILL)
				}
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	<-p.exited
	return nil
}

var (
	procsMu sync.Mutex
	procs   = map[*Proc]bool{}
)

func track(p *Proc) {
	procsMu.Lock()
	procs[p] = true
	procsMu.Unlock()
}

func untrack(p *Proc) {
	procsMu.Lock()
	delete(procs, p)
	procsMu.Unlock()
}

// KillAll kills every process group still running (on a signal or a fatal
// error of the load generator).
func KillAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for p := range procs {
		for _, pid := range Tree(p.Pid()) {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
}

// Tree returns pid and all its descendants that are alive.
func Tree(pid int) []int {
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(n)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], n)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

type stat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, os.ErrInvalid
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return stat{}, os.ErrInvalid
	}
	var s stat
	s.ppid, _ = strconv.Atoi(f[1])
	s.utime, _ = strconv.ParseInt(f[11], 10, 64)
	s.stime, _ = strconv.ParseInt(f[12], 10, 64)
	s.cutime, _ = strconv.ParseInt(f[13], 10, 64)
	s.cstime, _ = strconv.ParseInt(f[14], 10, 64)
	return s, nil
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// TreeCPU returns the CPU seconds (user+system) of pid and its live
// descendants, including the children they have already reaped.
func TreeCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	var ticks int64
	for _, p := range Tree(pid) {
		if s, err := readStat(p); err == nil {
			ticks += s.utime + s.stime + s.cutime + s.cstime
		}
	}
	return float64(ticks) / clockTicks
}

// RSS returns VmRSS of pid in KiB (0 if gone).
func RSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmRSS:"))
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+6:]))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

// TreeRSS returns the summed VmRSS (KiB) of pid and its descendants, and
// how many processes that is.
func TreeRSS(pid int) (kib int64, n int) {
	for _, p := range Tree(pid) {
		kib += RSS(p)
		n++
	}
	return kib, n
}

// Sampler polls the memory of a process tree and keeps the peaks, overall
// and since the last Mark.
type Sampler struct {
	pid  int
	mu   sync.Mutex
	peak Mem
	mark Mem
	stop chan struct{}
	wg   sync.WaitGroup
}

// Mem is a memory observation in KiB.
type Mem struct {
	Bridge int64 `json:"bridge_kib"` // the watched process alone
	Tree   int64 `json:"tree_kib"`   // it and its descendants
	Procs  int   `json:"procs"`      // processes in the tree
}

func (m *Mem) max(o Mem) {
	m.Bridge = max(m.Bridge, o.Bridge)
	m.Tree = max(m.Tree, o.Tree)
	m.Procs = max(m.Procs, o.Procs)
}

// Sample reads the tree's memory now.
func Sample(pid int) Mem {
	if pid <= 0 {
		return Mem{}
	}
	t, n := TreeRSS(pid)
	return Mem{Bridge: RSS(pid), Tree: t, Procs: n}
}

// NewSampler starts sampling pid every interval.
func NewSampler(pid int, every time.Duration) *Sampler {
	s := &Sampler{pid: pid, stop: make(chan struct{})}
	if pid <= 0 {
		return s
	}
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
		}
	})
	return s
}

func (s *Sampler) take() {
	m := Sample(s.pid)
	s.mu.Lock()
	s.peak.max(m)
	s.mark.max(m)
	s.mu.Unlock()
}

// Mark starts a new phase and returns the peak of the previous one.
func (s *Sampler) Mark() Mem {
	if s.pid > 0 {
		s.take()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mark
	s.mark = Mem{}
	return m
}

// Peak is the largest observation so far.
func (s *Sampler) Peak() Mem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// Stop ends the sampling.
func (s *Sampler) Stop() {
	close(s.stop)
	s.wg.Wait()
}
