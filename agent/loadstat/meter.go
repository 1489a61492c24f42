// Package loadstat measures what one partition replica costs its agent:
// the bytes per second it receives and sends, as moving averages, for
// the balancer's load-aware placement (docs/design.md §8) and the agent's
// metrics.
//
// A Meter counts bytes with one atomic add on the data path (an append, a
// follower's copy, a read) and turns the counts into rates only when
// asked (Rates): an exponentially weighted moving average in continuous
// time with time constant TimeConstant, so the readers' cadence (metric
// scrapes, the agent's load reports) does not change what it means. A
// young meter's average is corrected for the time it has not yet seen
// (the estimate divides by 1 - e^(-age/TimeConstant)), so a replica that
// opened a second ago reports its rate so far, not a fraction of it.
//
// All methods are safe for concurrent use. The package has no
// dependencies beyond the standard library.
package loadstat

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// TimeConstant is the averages' time constant: a step in the rate shows
// 63% after it, 86% after twice it.
const TimeConstant = 20 * time.Second

// Rates are a replica's moving averages, in bytes per second.
type Rates struct {
	// BytesIn is what the replica appended: a leader's producers' bytes,
	// a follower's copies from its leader.
	BytesIn float64
	// BytesOut is what it read for consumers (and other readers of the
	// partition, such as a group coordinator replaying its log).
	BytesOut float64
	// ReplicaBytesOut is what it read for its followers, as leader.
	ReplicaBytesOut float64
	// Age is how long the meter has measured; RoleAge how long the
	// replica has led (Leader) or followed.
	Age, RoleAge time.Duration
	Leader       bool
}

// Meter measures one replica. The zero Meter starts measuring at its
// first Start or Rates call.
type Meter struct {
	in, out, replicaOut atomic.Int64

	mu        sync.Mutex
	started   time.Time
	last      time.Time // of the last Rates
	seen      [3]int64  // the counters at last
	avg       [3]float64
	leader    bool
	roleSince time.Time
}

// Start starts the measurement at now, if it has not started.
func (m *Meter) Start(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startLocked(now)
}

func (m *Meter) startLocked(now time.Time) {
	if m.started.IsZero() {
		m.started, m.last, m.roleSince = now, now, now
	}
}

// AddIn counts n bytes appended.
func (m *Meter) AddIn(n int) { m.in.Add(int64(n)) }

// AddOut counts n bytes read for a consumer.
func (m *Meter) AddOut(n int) { m.out.Add(int64(n)) }

// AddReplicaOut counts n bytes read for a follower.
func (m *Meter) AddReplicaOut(n int) { m.replicaOut.Add(int64(n)) }

// SetRole records whether the replica leads, from now on.
func (m *Meter) SetRole(leader bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startLocked(now)
	if leader != m.leader {
		m.leader, m.roleSince = leader, now
	}
}

// Rates folds the bytes counted since the last call into the averages and
// returns them as of now. A now before the last call's changes nothing.
func (m *Meter) Rates(now time.Time) Rates {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startLocked(now)
	if dt := now.Sub(m.last).Seconds(); dt > 0 {
		// The bytes of the interval, spread evenly over it, decay as
		// e^(-t/TimeConstant) like the average before them.
		keep := math.Exp(-dt / TimeConstant.Seconds())
		for i, c := range [3]int64{m.in.Load(), m.out.Load(), m.replicaOut.Load()} {
			m.avg[i] = m.avg[i]*keep + float64(c-m.seen[i])/dt*(1-keep)
			m.seen[i] = c
		}
		m.last = now
	}
	age := m.last.Sub(m.started)
	seen := 1 - math.Exp(-age.Seconds()/TimeConstant.Seconds())
	r := Rates{Age: age, RoleAge: max(now.Sub(m.roleSince), 0), Leader: m.leader}
	if seen > 0 {
		r.BytesIn, r.BytesOut, r.ReplicaBytesOut = m.avg[0]/seen, m.avg[1]/seen, m.avg[2]/seen
	}
	return r
}
