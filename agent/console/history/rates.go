package history

import "math"

// Delta is how much a counter grew from prev to cur: NaN when it went
// down, which a counter does only when it was made anew (a topic deleted
// and created again), so that the change is unknown.
func Delta(cur, prev float64) float64 {
	if cur < prev {
		return math.NaN()
	}
	return cur - prev
}

// IntervalQuantile is the q-quantile of the observations cur has and
// prev had not, estimated as Prometheus's histogram_quantile does: by
// linear interpolation inside the bucket the rank falls in (from 0 for
// the first bucket), and the highest bound when it falls past it. NaN
// when the interval has no observation, or the histograms do not match
// (other bounds, or a reset).
func IntervalQuantile(q float64, cur, prev Histogram) float64 {
	if len(cur.Bounds) == 0 || len(cur.Cumulative) != len(cur.Bounds) {
		return math.NaN()
	}
	prevAt := func(i int) float64 { return 0 }
	if len(prev.Bounds) > 0 {
		if len(prev.Bounds) != len(cur.Bounds) || len(prev.Cumulative) != len(prev.Bounds) {
			return math.NaN()
		}
		for i := range cur.Bounds {
			if cur.Bounds[i] != prev.Bounds[i] {
				return math.NaN()
			}
		}
		prevAt = func(i int) float64 { return prev.Cumulative[i] }
	}
	total := Delta(cur.Count, prev.Count)
	if !(total > 0) {
		return math.NaN()
	}
	rank := q * total
	below, lower := 0.0, 0.0 // the cumulative count and bound under bucket i
	for i, upper := range cur.Bounds {
		c := Delta(cur.Cumulative[i], prevAt(i))
		if math.IsNaN(c) {
			return math.NaN()
		}
		if c >= rank {
			if c == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(c-below)
		}
		below, lower = c, upper
	}
	return cur.Bounds[len(cur.Bounds)-1]
}
