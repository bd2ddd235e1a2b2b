package exec

import (
	"fmt"
	"os"
	"strings"
)

const canCheckPids = true

// alive reads the process's state; a zombie (Z) is dead and only waits
// for a reaper.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
