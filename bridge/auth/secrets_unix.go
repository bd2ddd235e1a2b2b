//go:build !windows

package auth

import "os"

// groupOrWorldReadable: a token file others can read (chmod 600 it).
func groupOrWorldReadable(m os.FileMode) bool { return m.Perm()&0o077 != 0 }
