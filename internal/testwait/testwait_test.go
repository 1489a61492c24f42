package testwait

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var polls int
	r := &recorder{TB: t}
	Until(r, 30*time.Second, func() bool {
		polls++
		return polls == 3
	}, "the third poll")
	if r.fatal != "" || polls != 3 {
		t.Fatalf("Until: %d polls, failure %q; want 3 polls and no failure", polls, r.fatal)
	}
}

func TestUntilFailsAtTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	Until(r, 50*time.Millisecond, func() bool { return false }, "agent %d", 7)
	if took := time.Since(start); took < 50*time.Millisecond || took > 10*time.Second {
		t.Errorf("Until gave up after %v, want about 50ms", took)
	}
	if !strings.Contains(r.fatal, "agent 7") || !strings.Contains(r.fatal, "50ms") {
		t.Errorf("failure message %q, want the awaited thing and the timeout", r.fatal)
	}
}

func TestPoll(t *testing.T) {
	if !Poll(time.Second, func() bool { return true }) {
		t.Error("Poll of a condition that holds: false")
	}
	if Poll(10*time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a condition that never holds: true")
	}
}
