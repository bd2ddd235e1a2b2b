//go:build windows

package serve

import "os"

// groupOrWorldReadable: Windows files have ACLs, not mode bits (Go
// reports 0666 for every writable file); there is nothing to check here.
func groupOrWorldReadable(os.FileMode) bool { return false }
