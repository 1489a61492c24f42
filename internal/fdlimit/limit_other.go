//go:build !unix

package fdlimit

// Current has no limit to read outside unix.
func Current() (limit uint64, ok bool) { return 0, false }
