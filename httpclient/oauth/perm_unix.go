//go:build unix

package oauth

import (
	"io/fs"
	"os"
	"syscall"
)

// oNoFollow makes opening a symbolic link fail (ELOOP) instead of opening
// what it points to.
const oNoFollow = syscall.O_NOFOLLOW

// ownedByUs reports whether fi belongs to this process's user: a store
// directory someone else owns could be emptied or filled by them.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
