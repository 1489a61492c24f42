//go:build unix

package fdlimit

import "golang.org/x/sys/unix"

// Current returns the process's soft RLIMIT_NOFILE; ok is false when it
// cannot be read or is unlimited.
func Current() (limit uint64, ok bool) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return uint64(lim.Cur), true
}
