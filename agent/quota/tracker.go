package quota

import (
	"sync"
	"time"
)

// MaxSensors bounds the rates a Tracker keeps at once. Client ids are
// the client's choice, so a default client-id quota would otherwise let
// one client grow the map with every id it invents; past the bound, new
// clients share one rate per key until idle rates are forgotten.
const MaxSensors = 100_000

// Tracker keeps the rate of every metered client (Kafka's quota
// sensors) and answers, for each request, how long its client must be
// throttled. Safe for concurrent use.
type Tracker struct {
	w         Window
	mu        sync.Mutex
	rates     map[Metered]*Rate
	lastSweep time.Time
}

// NewTracker returns a tracker measuring over w; a zero w is
// DefaultWindow.
func NewTracker(w Window) *Tracker {
	if w.Samples < 1 || w.Size <= 0 {
		w = DefaultWindow
	}
	return &Tracker{w: w, rates: map[Metered]*Rate{}}
}

// Record adds v to b's metered rate at now and returns the throttle time
// the rate now earns against b's limit (zero within it).
func (t *Tracker) Record(b Bound, v float64, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rate(b, now)
	r.Record(now, v)
	return r.Throttle(now, b.Limit)
}

// Admit records one event (a new connection) at now and reports true when
// the rate stays within b's limit, bursts of up to one sample's worth
// allowed; otherwise it records nothing and reports false, so a refused
// event does not push the next one further off.
func (t *Tracker) Admit(b Bound, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rate(b, now)
	if r.throttleWith(now, b.Limit, 1) > t.w.Size {
		return false
	}
	r.Record(now, 1)
	return true
}

// rate returns b's metered rate, made on first use; t.mu is held.
func (t *Tracker) rate(b Bound, now time.Time) *Rate {
	t.sweep(now)
	r, ok := t.rates[b.Metered]
	if !ok {
		m := b.Metered
		if len(t.rates) >= MaxSensors {
			m = Metered{Key: m.Key, User: "\x00overflow"}
			r = t.rates[m]
		}
		if r == nil {
			r = NewRate(t.w)
			t.rates[m] = r
		}
	}
	return r
}

// Len is the number of rates kept.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rates)
}

// sweep forgets idle rates, at most once per sample: a rate whose
// samples have all expired measures zero, as a new one would.
func (t *Tracker) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < t.w.Size {
		return
	}
	t.lastSweep = now
	for m, r := range t.rates {
		if r.Idle(now) {
			delete(t.rates, m)
		}
	}
}
