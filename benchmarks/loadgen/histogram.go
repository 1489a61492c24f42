package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets, as HDR histograms do:
// values below 2^subBits nanoseconds each have their own bucket, and every
// power of two above that is split into 2^subBits equal buckets. With
// subBits = 7 a reported quantile is within 1/128 (0.8%) of the true value,
// whatever its magnitude, in a fixed 7.5 KiB of counters.
//
// bucket layout (subBits = 7, sub = 128):
//
//	index 0..127           value v itself (v < 128 ns)
//	index (e-6)*128 + m    v in [2^e, 2^(e+1)), e >= 7, m = (v >> (e-7)) - 128
//
// A Histogram is not safe for concurrent use; give each goroutine its own
// and Merge them, or guard one with a mutex.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
	max    int64
}

const (
	subBits     = 7
	sub         = 1 << subBits
	histBuckets = (64 - subBits + 1) * sub
)

// bucketOf returns the bucket index of v (v >= 0).
func bucketOf(v int64) int {
	if v < sub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // 2^e <= v < 2^(e+1), e >= subBits
	m := int(uint64(v)>>(e-subBits)) - sub
	return (e-subBits+1)*sub + m
}

// bucketHigh returns the largest value that falls in bucket i.
func bucketHigh(i int) int64 {
	if i < sub {
		return int64(i)
	}
	e := i/sub - 1 + subBits
	m := int64(i%sub + sub)
	return (m+1)<<(e-subBits) - 1
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	h.total++
	if v > h.max {
		h.max = v
	}
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest recorded value, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value at quantile q (0 < q <= 1): the upper edge of
// the bucket holding the ceil(q*count)-th smallest value, capped at Max.
// It is zero for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketHigh(i), h.max))
		}
	}
	return time.Duration(h.max)
}
