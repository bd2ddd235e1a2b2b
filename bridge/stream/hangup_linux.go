//go:build linux

package stream

import (
	"sync"
	"syscall"
)

// hangups learns that the clients of detached streams went away from one
// epoll set (EPOLLRDHUP: the client closed or shut down its side; EPOLLHUP,
// EPOLLERR: the connection broke) watched by one goroutine for the whole
// Handler, instead of a goroutine blocked reading each connection. The
// connections stay with Go's poller for writing; the set only listens.
type hangups struct {
	mu      sync.Mutex
	started bool
	failed  bool // epoll could not be set up: streams read for themselves
	epfd    int
	stop    [2]int // a pipe in the set: writing to it ends the loop
	next    uint64
	byToken map[uint64]*rawStream
}

// watch adds rs's connection to the set. It reports false if rs must read
// for itself. start runs the loop goroutine the first time (the caller
// counts it in its WaitGroup).
func (hw *hangups) watch(rs *rawStream, start func(loop func())) bool {
	sc, ok := rs.c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.failed || !hw.started && !hw.setup(start) {
		return false
	}
	hw.next++
	token := hw.next
	// The token, not the descriptor, names the stream in events: a
	// descriptor number is reused once its connection is closed, and an
	// event still queued for the old one must not reach the new stream.
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT,
		Fd: int32(uint32(token)), Pad: int32(uint32(token >> 32))}
	var addErr error
	// Inside Control the descriptor cannot be closed under us. Closing it
	// later removes it from the set.
	if err := raw.Control(func(fd uintptr) {
		addErr = syscall.EpollCtl(hw.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}); err != nil || addErr != nil {
		return false
	}
	rs.token = token
	hw.byToken[token] = rs
	return true
}

// forget drops rs (its connection is about to close).
func (hw *hangups) forget(rs *rawStream) {
	if rs.token == 0 {
		return
	}
	hw.mu.Lock()
	delete(hw.byToken, rs.token)
	hw.mu.Unlock()
}

func (hw *hangups) setup(start func(loop func())) bool {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		hw.failed = true
		return false
	}
	if err := syscall.Pipe2(hw.stop[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		hw.failed = true
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN} // token 0: stop
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, hw.stop[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(hw.stop[0])
		syscall.Close(hw.stop[1])
		hw.failed = true
		return false
	}
	hw.epfd, hw.started, hw.byToken = epfd, true, map[uint64]*rawStream{}
	start(hw.loop)
	return true
}

// loop cancels the stream of each connection that hangs up, until close.
func (hw *hangups) loop() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(hw.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if token == 0 {
				syscall.Close(hw.epfd)
				syscall.Close(hw.stop[0])
				syscall.Close(hw.stop[1])
				return
			}
			hw.mu.Lock()
			rs := hw.byToken[token]
			delete(hw.byToken, token)
			hw.mu.Unlock()
			if rs != nil {
				rs.cancel()
			}
		}
	}
}

// close ends the loop (once every stream has ended).
func (hw *hangups) close() {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.started {
		syscall.Write(hw.stop[1], []byte{0})
		hw.started, hw.failed = false, true
	}
}
