package quota

import "time"

// Window is Kafka's quota.window.num and quota.window.size.seconds: a
// rate is the sum of up to Samples samples, each Size long, over the time
// they cover.
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's default: 11 samples of one second.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

// Rate is a value per second measured over sampled windows, as Kafka's
// Rate over a SampledStat: a sample starts at the first record after the
// previous one has lasted Size, and is forgotten once it started
// Samples×Size ago. Not safe for concurrent use.
//
// Kafka divides the live samples' sum by the time since the oldest
// started but never by less than (Samples-1)×Size, and computes the
// throttle over that padded window. A client starting from idle may then
// send ten seconds' worth of its quota at once, and one that sends again
// as soon as each throttle ends averages 1.1 to 1.3 times its quota over
// tens of seconds (each forgotten sample lets another burst through).
// Here the throttle is computed over the time the samples really cover,
// so a client is held to its quota from its first request, while one
// that was idle may still catch up on what it did not use within the
// window.
type Rate struct {
	w       Window
	samples []sample
	current int
}

type sample struct {
	start time.Time
	value float64
	used  bool
}

// NewRate returns an empty rate over w.
func NewRate(w Window) *Rate {
	return &Rate{w: w, samples: make([]sample, w.Samples)}
}

// Record adds v at now.
func (r *Rate) Record(now time.Time, v float64) {
	s := &r.samples[r.current]
	if !s.used || now.Sub(s.start) >= r.w.Size {
		if s.used {
			r.current = (r.current + 1) % len(r.samples)
			s = &r.samples[r.current]
		}
		*s = sample{start: now, used: true}
	}
	s.value += v
}

// purge forgets the samples that started Samples×Size or more ago.
func (r *Rate) purge(now time.Time) {
	expire := time.Duration(len(r.samples)) * r.w.Size
	for i := range r.samples {
		if r.samples[i].used && now.Sub(r.samples[i].start) >= expire {
			r.samples[i] = sample{}
		}
	}
}

// windowSize is the time the live samples cover: since the oldest
// started.
func (r *Rate) windowSize(now time.Time) time.Duration {
	r.purge(now)
	oldest := now
	for _, s := range r.samples {
		if s.used && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	return now.Sub(oldest)
}

// Measure returns the rate per second at now; over a window shorter
// than one sample it is the sum per sample.
func (r *Rate) Measure(now time.Time) float64 {
	size := max(r.windowSize(now), r.w.Size)
	return r.total() / size.Seconds()
}

func (r *Rate) total() float64 {
	total := 0.0
	for _, s := range r.samples {
		total += s.value
	}
	return total
}

// Idle reports whether every sample has been forgotten at now.
func (r *Rate) Idle(now time.Time) bool {
	r.purge(now)
	for _, s := range r.samples {
		if s.used {
			return false
		}
	}
	return true
}

// Throttle returns how long a client over limit must wait for its rate
// to fall back to it: Kafka's excess over the quota, as a fraction of it,
// times the window, which comes to the time the samples' sum takes at
// the quota less the time they cover. Zero when within limit.
func (r *Rate) Throttle(now time.Time, limit float64) time.Duration {
	return r.throttleWith(now, limit, 0)
}

// throttleWith is Throttle as it would be with v more recorded.
func (r *Rate) throttleWith(now time.Time, limit, v float64) time.Duration {
	if limit <= 0 {
		return 0
	}
	size := r.windowSize(now)
	ahead := time.Duration((r.total()+v)/limit*float64(time.Second)) - size
	if ahead <= 0 {
		return 0
	}
	return ahead.Round(time.Millisecond)
}
