package kafka

// Auto-creation bounds. A Metadata request that names unknown topics
// creates them when auto-creation is on (metadata.go), and every topic
// costs files, goroutines and metadata for as long as it exists: one
// request of 63 KB used to create 2,028 topics. Two bounds, Strata's own
// (Kafka has neither), hold that back:
//
//   - per request, at most Config.AutoCreateTopicsPerRequest topics
//     (--auto-create-topics-per-request) are created;
//   - per agent, at most Config.AutoCreateTopicsRate topics a second
//     (--auto-create-topics-rate), from a token bucket holding up to one
//     second's worth.
//
// A topic past either bound is answered LEADER_NOT_AVAILABLE, what Kafka
// answers for a topic whose auto-creation has begun and is not done;
// clients retry it after a metadata refresh, and get the topic once a
// later request may create it. Names that are not valid topic names are
// refused (INVALID_TOPIC_EXCEPTION) before they take from either bound.

import (
	"sync"
	"time"
)

// Defaults of the auto-creation bounds.
const (
	DefaultAutoCreateTopicsRate       = 20
	DefaultAutoCreateTopicsPerRequest = 20
)

// Labels of strata_kafka_auto_create_deferred_total.
const (
	deferredRate    = "rate"
	deferredRequest = "request"
)

// autoCreateLimiter is the per-agent token bucket. Safe for concurrent use.
type autoCreateLimiter struct {
	perRequest int
	rate       float64 // tokens per second; also the bucket's size

	mu     sync.Mutex
	tokens float64
	filled time.Time
}

func newAutoCreateLimiter(rate, perRequest int) *autoCreateLimiter {
	rate, perRequest = max(rate, 1), max(perRequest, 1)
	return &autoCreateLimiter{perRequest: perRequest, rate: float64(rate), tokens: float64(rate)}
}

// allow takes one topic's token at time now, and reports whether there
// was one.
func (l *autoCreateLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.filled.IsZero() {
		l.tokens = min(l.tokens+now.Sub(l.filled).Seconds()*l.rate, l.rate)
	}
	l.filled = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// autoCreateRound counts one Metadata request's creations against both
// bounds.
type autoCreateRound struct {
	l       *autoCreateLimiter
	created int
	// deferred counts topics past each bound, for the metric.
	overRequest, overRate int
}

// admit reports whether the request may create one more topic now; each
// true must be followed by an attempt to create it.
func (r *autoCreateRound) admit(now time.Time) bool {
	if r.created >= r.l.perRequest {
		r.overRequest++
		return false
	}
	if !r.l.allow(now) {
		r.overRate++
		return false
	}
	r.created++
	return true
}
