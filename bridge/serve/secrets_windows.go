//go:build windows

package serve

import "strings"

// envNameEqual compares variable names as the platform does: Windows
// environment names are case-insensitive.
func envNameEqual(a, b string) bool { return strings.EqualFold(a, b) }
