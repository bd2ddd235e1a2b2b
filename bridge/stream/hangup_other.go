//go:build !linux

package stream

// hangups: without epoll each detached stream reads its own connection.
type hangups struct{}

func (hw *hangups) watch(rs *rawStream, start func(loop func())) bool { return false }
func (hw *hangups) forget(rs *rawStream)                              {}
func (hw *hangups) close()                                            {}
