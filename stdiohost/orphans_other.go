//go:build !linux

package stdiohost

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"
)

// Orphans is the Linux orphan reaper; elsewhere it does nothing. On Windows
// nothing escapes the child's job. On macOS and the BSDs, which have no
// child subreaper, a descendant that leaves the child's process group
// (setsid, setpgid) is re-parented to init and outlives the bridge.
type Orphans struct{}

// AdoptOrphans returns a no-op Orphans and an error wrapping
// errors.ErrUnsupported.
func AdoptOrphans(zerolog.Logger) (*Orphans, error) {
	return &Orphans{}, fmt.Errorf("stdiohost: adopting orphans: %w", errors.ErrUnsupported)
}

// Close does nothing.
func (*Orphans) Close() {}
