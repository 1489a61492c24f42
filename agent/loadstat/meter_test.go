package loadstat

import (
	"math"
	"testing"
	"time"
)

// TestMeter drives a meter on logical time: a young meter reports its
// rate so far, a steady rate is reported whatever the reading cadence,
// and a change of rate shows 63% after one time constant.
func TestMeter(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*0.01+1e-9 {
			t.Errorf("%s: %.1f, want %.1f", what, got, want)
		}
	}
	var m Meter
	m.Start(t0)
	// 1000 bytes a second for 2 s, read once: the rate so far.
	m.AddIn(2000)
	r := m.Rates(t0.Add(2 * time.Second))
	near("in after 2 s", r.BytesIn, 1000)
	if r.Age != 2*time.Second || r.BytesOut != 0 {
		t.Errorf("rates %+v", r)
	}
	// Steady, read every 100 ms, then every 7 s: still 1000.
	now := t0.Add(2 * time.Second)
	for range 100 {
		now = now.Add(100 * time.Millisecond)
		m.AddIn(100)
	}
	near("in read often", m.Rates(now).BytesIn, 1000)
	for range 10 {
		now = now.Add(7 * time.Second)
		m.AddIn(7000)
		m.AddOut(14000)
	}
	r = m.Rates(now)
	near("in read seldom", r.BytesIn, 1000)
	// Out started at 2000/s 70 s ago, long after the meter started: the
	// average has seen 1-e^(-70/20) of it, corrected only for the time
	// before the meter started, which is none of it.
	near("out", r.BytesOut, 2000*(1-math.Exp(-70.0/20))/(1-math.Exp(-(now.Sub(t0)).Seconds()/20)))
	// The rate triples: after one time constant the average has moved
	// 63% of the way.
	for range 20 {
		now = now.Add(time.Second)
		m.AddIn(3000)
	}
	near("in a time constant after a step", m.Rates(now).BytesIn, 1000+2000*(1-math.Exp(-1)))
	// A reading at an earlier time changes nothing.
	if a, b := m.Rates(now.Add(-time.Second)).BytesIn, m.Rates(now).BytesIn; a != b {
		t.Errorf("a reading back in time moved the average: %v then %v", a, b)
	}
}

// TestMeterRole: the role's age restarts when the role changes, not when
// it is set again.
func TestMeterRole(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var m Meter
	m.SetRole(false, t0)
	m.SetRole(true, t0.Add(10*time.Second))
	m.SetRole(true, t0.Add(20*time.Second))
	r := m.Rates(t0.Add(30 * time.Second))
	if !r.Leader || r.RoleAge != 20*time.Second || r.Age != 30*time.Second {
		t.Errorf("rates %+v: want leader for 20 s of 30", r)
	}
	m.AddReplicaOut(3000)
	if r := m.Rates(t0.Add(31 * time.Second)); r.ReplicaBytesOut <= 0 {
		t.Errorf("replica out %v", r.ReplicaBytesOut)
	}
}
