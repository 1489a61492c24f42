package history

import (
	"math"
	"unsafe"
)

// Key names a series: its metric and the labels that metric has (the
// others are empty, Partition -1).
type Key struct {
	Metric    string
	Topic     string
	Partition int32
	Group     string
	Label     string
}

// series is one metric's values at the ring's positions. Rates and gauges
// are float32 (a chart needs six digits); offsets are exact, as an int32
// away from base, so that a lag (an offset minus another) is exact too
// at half the bytes of an int64.
type series struct {
	values []float32 // len Points, NaN for none; nil for an offset series
	base   int64
	deltas []int32 // len Points, noDelta for none; nil unless an offset series
	// lastSeq is the ring's sequence number of the last point that gave
	// this series a value: once every point since is evicted the series
	// is dropped (Ring.collect).
	lastSeq uint64
}

// noDelta marks an offset series' position that holds no value.
const noDelta = math.MinInt32

func newSeries(points int, offsets bool) *series {
	s := &series{}
	if offsets {
		s.deltas = make([]int32, points)
		for i := range s.deltas {
			s.deltas[i] = noDelta
		}
	} else {
		s.values = make([]float32, points)
		for i := range s.values {
			s.values[i] = float32(math.NaN())
		}
	}
	return s
}

func (s *series) clear(pos int) {
	if s.deltas != nil {
		s.deltas[pos] = noDelta
	} else {
		s.values[pos] = float32(math.NaN())
	}
}

func (s *series) set(pos int, v float64) {
	if s.deltas == nil {
		s.values[pos] = float32(v)
		return
	}
	o := int64(v)
	d, ok := s.delta(o)
	if !ok {
		s.rebase(o)
		d, _ = s.delta(o)
	}
	s.deltas[pos] = d
}

// delta is o as a distance from base, if it fits.
func (s *series) delta(o int64) (int32, bool) {
	d := o - s.base
	if d <= noDelta || d > math.MaxInt32 {
		return 0, false
	}
	return int32(d), true
}

// rebase moves base to o. An offset that moved more than 2^31 within the
// ring's hour (a group reset, a partition recreated) leaves the points
// still further away without a value.
func (s *series) rebase(o int64) {
	old := s.base
	s.base = o
	for i, d := range s.deltas {
		if d == noDelta {
			continue
		}
		if nd, ok := s.delta(old + int64(d)); ok {
			s.deltas[i] = nd
		} else {
			s.deltas[i] = noDelta
		}
	}
}

func (s *series) at(pos int) float64 {
	if s.deltas != nil {
		if d := s.deltas[pos]; d != noDelta {
			return float64(s.base + int64(d))
		}
		return math.NaN()
	}
	return float64(s.values[pos])
}

// seriesOverhead estimates the bytes a series costs besides its arrays
// and label strings: the map's entry (key and pointer) and the struct.
const seriesOverhead = int64(unsafe.Sizeof(Key{})) + 8 + int64(unsafe.Sizeof(series{})) + 32

// bytes estimates the heap the series and its key hold.
func (s *series) bytes(k Key) int64 {
	n := seriesOverhead + int64(len(k.Metric)+len(k.Topic)+len(k.Group)+len(k.Label))
	return n + int64(len(s.values))*4 + int64(len(s.deltas))*4
}
