//go:build !windows

package serve

// envNameEqual compares variable names as the platform does.
func envNameEqual(a, b string) bool { return a == b }
