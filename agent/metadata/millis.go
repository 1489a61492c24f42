package metadata

import (
	"math"
	"time"
)

// MaxDurationMs is the largest millisecond count a time.Duration holds.
// Kafka accepts millisecond configs up to Long.MAX; past about 292 years
// a time.Duration overflows, so such values mean "never" to their users.
const MaxDurationMs = math.MaxInt64 / int64(time.Millisecond)

// Millis converts a millisecond config, saturating where a
// time.Duration would overflow.
func Millis(ms int64) time.Duration {
	return time.Duration(min(ms, MaxDurationMs)) * time.Millisecond
}
