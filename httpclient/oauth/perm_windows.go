//go:build windows

package oauth

import "io/fs"

// oNoFollow: Windows has no O_NOFOLLOW; readStoreFile checks with Lstat.
const oNoFollow = 0

// ownedByUs: Windows permissions are ACLs, which the mode bits do not
// show; the per-user profile directory is the protection there.
func ownedByUs(fs.FileInfo) bool { return true }
