//go:build !windows

package main

// runService runs the command as a Windows service; elsewhere there is no
// such thing (systemd and launchd stop a service with SIGTERM).
func runService([]string) (code int, ok bool) { return 0, false }
