//go:build unix

package loadgen

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// raiseFileLimit raises this process's soft RLIMIT_NOFILE, up to the hard
// limit, so that it may open n more files.
func raiseFileLimit(n int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	open := 0
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(fds)
	}
	need := uint64(open + n + fileSlack)
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("--connections %d: the load generator needs %d open files, and RLIMIT_NOFILE's hard limit is %d; raise it (ulimit -Hn)", n, need, lim.Max)
	}
	lim.Cur = need
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", need, err)
	}
	return nil
}
