package stdiohost

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A tree on Windows is a Job Object holding the child and, because job
// membership is inherited, every process it starts. The job is created
// with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and its only handle is ours
// (not inheritable), so the whole tree dies with that handle: on release,
// and on every way the bridge can end, TerminateProcess of the bridge
// included, because the kernel closes a dead process's handles. Without
// JOB_OBJECT_LIMIT_BREAKAWAY_OK no descendant can leave the job. See
// tree_unix.go for the methods' contract.
type tree struct {
	mu  sync.Mutex
	job windows.Handle // 0 once released
}

// killedStatus is the exit status TerminateJobObject gives every process
// in the tree: the status Windows gives a console program ended by Ctrl-C,
// the nearest thing to Unix's death by signal.
const killedStatus = uint32(windows.STATUS_CONTROL_C_EXIT)

func (t *tree) prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Suspended until attach has put it in the job: a child that ran at
	// once could start a grandchild outside the job. A process group of its
	// own keeps the console's Ctrl-C for the bridge, which then stops the
	// child in order, as on Unix.
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP
}

// attach puts the suspended child in a new job and lets it run. On error
// the child is still suspended; the caller kills it.
func (t *tree) attach(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("stdiohost: CreateJobObject: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("stdiohost: SetInformationJobObject: %w", err)
	}
	pid := uint32(cmd.Process.Pid)
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("stdiohost: OpenProcess: %w", err)
	}
	err = windows.AssignProcessToJobObject(job, proc)
	windows.CloseHandle(proc)
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("stdiohost: AssignProcessToJobObject: %w", err)
	}
	t.mu.Lock()
	t.job = job
	t.mu.Unlock()
	if err := resumeThreads(pid); err != nil {
		return err
	}
	return nil
}

// resumeThreads resumes the suspended main thread of process pid. os/exec
// keeps the thread handle CreateProcess returned to itself, so the thread
// is found by a snapshot of the system's threads.
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("stdiohost: thread snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("stdiohost: OpenThread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("stdiohost: ResumeThread: %w", err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("stdiohost: thread walk: %w", err)
	}
	if resumed == 0 {
		return errors.New("stdiohost: the child's main thread was not found")
	}
	return nil
}

// stop has nothing gentler to offer: a console child in a process group
// of its own could get CTRL_BREAK_EVENT, but only if it shares the
// bridge's console, and a child without a console gets nothing. Close has
// already closed stdin and waited, the stdio transport's polite request.
func (t *tree) stop() { t.kill() }

func (t *tree) kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		_ = windows.TerminateJobObject(t.job, killedStatus)
	}
}

func (t *tree) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		windows.CloseHandle(t.job) // KILL_ON_JOB_CLOSE: whatever is left dies
		t.job = 0
	}
}

// stoppedByUs tells whether the child's exit error is the termination that
// stop or kill caused, which Close does not report as an error.
func stoppedByUs(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && uint32(ee.ExitCode()) == killedStatus
}
