//go:build !unix

package loadgen

// raiseFileLimit has nothing to raise: RLIMIT_NOFILE is a unix limit
// (Windows bounds a process's handles only in the millions).
func raiseFileLimit(int) error { return nil }
