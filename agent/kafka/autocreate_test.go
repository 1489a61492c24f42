package kafka

import (
	"testing"
	"time"
)

// TestAutoCreateRound: a request creates at most the per-request bound,
// and requests together at most the bucket (one second's worth) at once
// and then the rate per second.
func TestAutoCreateRound(t *testing.T) {
	l := newAutoCreateLimiter(4, 3)
	t0 := time.Unix(1000, 0)
	admitted := func(at time.Duration, want int) *autoCreateRound {
		t.Helper()
		r := &autoCreateRound{l: l}
		got := 0
		for range 10 {
			if r.admit(t0.Add(at)) {
				got++
			}
		}
		if got != want || r.overRequest+r.overRate != 10-want {
			t.Fatalf("at %v: %d admitted (%d over the request bound, %d over the rate), want %d", at, got, r.overRequest, r.overRate, want)
		}
		return r
	}
	admitted(0, 3)      // per-request bound; the bucket keeps 1
	r := admitted(0, 1) // the bucket's last token
	if r.overRate != 9 || r.overRequest != 0 {
		t.Fatalf("over the rate %d, over the request bound %d; want 9, 0", r.overRate, r.overRequest)
	}
	admitted(250*time.Millisecond, 1) // 4/s: one token back
	admitted(time.Hour, 3)            // a full bucket holds 4, the request takes 3
	admitted(time.Hour, 1)
	admitted(time.Hour+time.Second, 3)
}
