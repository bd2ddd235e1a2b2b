//go:build linux

package load

import "sync"

// Large responses (MiB-sized results) are read into recycled buffers, so
// that the load generator does not fault in fresh memory for each one and
// the measurement stays about the target.
var (
	bufMu   sync.Mutex
	bufFree [][]byte
)

const (
	bigBuf   = 64 << 10
	keepBufs = 8
)

// getBuf returns a buffer of length n.
func getBuf(n int) []byte {
	if n >= bigBuf {
		bufMu.Lock()
		for i, b := range bufFree {
			if cap(b) >= n {
				bufFree = append(bufFree[:i], bufFree[i+1:]...)
				bufMu.Unlock()
				return b[:n]
			}
		}
		bufMu.Unlock()
	}
	return make([]byte, n)
}

// takeBuf returns the largest free buffer (length 0), or nil.
func takeBuf() []byte {
	bufMu.Lock()
	defer bufMu.Unlock()
	best := -1
	for i, b := range bufFree {
		if best < 0 || cap(b) > cap(bufFree[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := bufFree[best]
	bufFree = append(bufFree[:best], bufFree[best+1:]...)
	return b[:0]
}

// putBuf recycles b (only large ones are kept).
func putBuf(b []byte) {
	if cap(b) < bigBuf {
		return
	}
	bufMu.Lock()
	defer bufMu.Unlock()
	if len(bufFree) < keepBufs {
		bufFree = append(bufFree, b[:0])
		return
	}
	// Keep the largest ones.
	small := 0
	for i, f := range bufFree {
		if cap(f) < cap(bufFree[small]) {
			small = i
		}
	}
	if cap(b) > cap(bufFree[small]) {
		bufFree[small] = b[:0]
	}
}
