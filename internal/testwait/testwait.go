// Package testwait waits, in tests, for a condition to hold, with a
// deadline: the replacement for a sleep that hopes the other goroutine,
// process or server got there first.
//
// The condition is polled, first after a millisecond and then at growing
// intervals up to maxInterval, so a condition that holds at once costs
// nothing and one that takes seconds costs few polls. It runs on the
// caller's goroutine.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// maxInterval bounds the wait between two polls.
const maxInterval = 20 * time.Millisecond

// Until polls cond until it returns true, and fails t (Fatalf, so from the
// test's goroutine only) if timeout passes first; the message is
// format and args, saying what was awaited.
func Until(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("not within %v: %s", timeout, fmt.Sprintf(format, args...))
	}
}

// Poll polls cond until it returns true or timeout passes, and reports
// whether it held; for callers that fail in their own words, or that must
// not call t.Fatal (another goroutine).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	interval := time.Millisecond
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(interval, time.Until(deadline)))
		interval = min(2*interval, maxInterval)
	}
	return true
}
