//go:build windows

package serve

import (
	"os"
	"strings"
)

// envNameEqual compares variable names as the platform does: Windows
// environment names are case-insensitive.
func envNameEqual(a, b string) bool { return strings.EqualFold(a, b) }

// groupOrWorldReadable: Windows files have ACLs, not mode bits (Go
// reports 0666 for every writable file); there is nothing to check here.
func groupOrWorldReadable(os.FileMode) bool { return false }
