package objstore

import (
	"errors"
	"syscall"
	"time"
)

// A process briefly out of file descriptors (a burst of connections, an
// agent opening thousands of partitions) should not fail a store write
// that would succeed a moment later: every open of the fs backend is
// retried on EMFILE and ENFILE, fsOpenAttempts times in all, pausing from
// fsOpenBackoff and doubling (about 0.6 s in all). Only the open is
// retried, never a whole operation, so a conditional Put that got past
// its rename is never done twice.
const (
	fsOpenAttempts = 5
	fsOpenBackoff  = 40 * time.Millisecond
)

// openRetrying calls open until it succeeds, fails for another reason, or
// has failed for want of descriptors fsOpenAttempts times; the last error
// is returned as is (it names the path and wraps EMFILE or ENFILE).
func openRetrying[T any](open func() (T, error)) (T, error) {
	pause := fsOpenBackoff
	for attempt := 1; ; attempt++ {
		v, err := open()
		if err == nil || attempt == fsOpenAttempts || !outOfDescriptors(err) {
			return v, err
		}
		time.Sleep(pause)
		pause *= 2
	}
}

func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
