//go:build windows

package auth

import "os"

// groupOrWorldReadable: Windows files have ACLs, not mode bits (Go
// reports 0666 for every writable file); there is nothing to check here.
func groupOrWorldReadable(os.FileMode) bool { return false }
