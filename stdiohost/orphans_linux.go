package stdiohost

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Orphans makes the bridge the reaper of its children's descendants.
//
// A process group reaches every descendant except one that leaves the
// group: a grandchild that calls setsid (daemons do) survived the bridge in
// 3 of 3 runs. As a child subreaper (prctl PR_SET_CHILD_SUBREAPER) the
// bridge, instead of init, inherits every descendant whose parent dies, so
// such an escapee can still be found: it is a child of ours that Start did
// not launch. Close ends them all.
//
// Inherited processes that exit while the bridge runs must be reaped, or
// their zombies pile up. Waiting for any child (wait4(-1)) would also take
// the exit status of the children Start launched away from their
// exec.Cmd.Wait, so the reaper never does that: on SIGCHLD it lists the
// processes whose parent is the bridge in /proc, skips the ones Start
// launched (the children registry, locked against a Start in progress) and
// waits for each remaining zombie by its pid. The same rule makes it unsafe
// in a process that starts children by other means than Start (a test
// binary, for one), which is why the command enables it, not the package.
type Orphans struct {
	log  zerolog.Logger
	sigs chan os.Signal
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// AdoptOrphans makes the process a child subreaper and starts reaping the
// descendants it inherits. Call it only in a process whose children are all
// started with Start, and call Close at exit, after every Host is closed.
func AdoptOrphans(log zerolog.Logger) (*Orphans, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return &Orphans{}, fmt.Errorf("stdiohost: PR_SET_CHILD_SUBREAPER: %w", err)
	}
	o := &Orphans{
		log:  log,
		sigs: make(chan os.Signal, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	signal.Notify(o.sigs, unix.SIGCHLD)
	go o.loop()
	return o, nil
}

func (o *Orphans) loop() {
	defer close(o.done)
	for {
		select {
		case <-o.quit:
			return
		case <-o.sigs:
			o.adopted()
		}
	}
}

// Close ends every inherited descendant: SIGTERM (to the process and to the
// group it leads), up to orphanGrace for them to exit, then SIGKILL,
// repeated while killing one hands its own children to the bridge. Then it
// stops reaping and gives up the subreaper role. It is idempotent.
func (o *Orphans) Close() {
	if o.sigs == nil {
		return // AdoptOrphans failed
	}
	o.once.Do(func() {
		close(o.quit)
		<-o.done
		defer func() {
			signal.Stop(o.sigs)
			// From here on orphans go to init again, as before AdoptOrphans.
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		}()
		termed := map[int]bool{}
		grace := time.NewTimer(orphanGrace)
		defer grace.Stop()
		killing := false
		for round := 0; round < 100; round++ {
			live := o.adopted()
			if len(live) == 0 {
				return
			}
			if round == 0 {
				o.log.Info().Ints("pids", live).Msg("stopping descendants that left their child's process group")
			}
			for _, pid := range live {
				switch {
				case killing:
					signalOrphan(pid, unix.SIGKILL)
				case !termed[pid]:
					termed[pid] = true
					signalOrphan(pid, unix.SIGTERM)
				}
			}
			// Each exit of an inherited process raises SIGCHLD; a second
			// timer keeps a lost wake-up from stalling the loop.
			retry := time.NewTimer(orphanGrace)
			select {
			case <-o.sigs:
			case <-grace.C:
				killing = true
			case <-retry.C:
			}
			retry.Stop()
		}
		o.log.Warn().Msg("descendants kept appearing; giving up")
	})
}

func signalOrphan(pid int, sig unix.Signal) {
	_ = unix.Kill(pid, sig)
	// An escapee that made itself a group leader may have a group of its
	// own; the pid cannot be reused while the process is our unreaped
	// child, so the group id is still its.
	if pgid, err := unix.Getpgid(pid); err == nil && pgid == pid {
		_ = unix.Kill(-pid, sig)
	}
}

// adopted reaps the inherited processes that have exited and returns the
// pids of those still running.
func (o *Orphans) adopted() []int {
	children.starting.Lock()
	defer children.starting.Unlock()
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		o.log.Warn().Err(err).Msg("cannot list processes")
		return nil
	}
	var live []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := procStat(pid)
		if !ok || ppid != self || isChild(pid) {
			continue
		}
		if state != 'Z' {
			live = append(live, pid)
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			o.log.Debug().Int("pid", pid).Int("status", ws.ExitStatus()).Msg("reaped an inherited descendant")
		}
	}
	return live
}

// procStat reads a process's state and parent pid from /proc/PID/stat:
// "pid (comm) state ppid ...", where comm may contain anything.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return f[0][0], ppid, err == nil
}
