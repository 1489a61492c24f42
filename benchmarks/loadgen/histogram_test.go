package loadgen

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBucketEdges: every value lies in its bucket, and bucket edges meet.
func TestBucketEdges(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1<<62 + 12345, 1<<63 - 1} {
		i := bucketOf(v)
		if hi := bucketHigh(i); v > hi {
			t.Errorf("value %d in bucket %d whose top is %d", v, i, hi)
		}
		if i > 0 && v <= bucketHigh(i-1) {
			t.Errorf("value %d in bucket %d but not above bucket %d's top %d", v, i, i-1, bucketHigh(i-1))
		}
		if i >= histBuckets {
			t.Errorf("value %d: bucket %d out of range", v, i)
		}
	}
}

// TestQuantileAccuracy: against sorted samples, every quantile is within
// the 1/128 relative error the layout promises.
func TestQuantileAccuracy(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, seed))
	var h Histogram
	var values []int64
	for range 100000 {
		v := int64(rng.ExpFloat64() * float64(2*time.Millisecond))
		values = append(values, v)
		h.Record(time.Duration(v))
	}
	slices.Sort(values)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := values[int(q*float64(len(values)))-1]
		got := int64(h.Quantile(q))
		if got < want || float64(got-want) > float64(want)/128+1 {
			t.Errorf("seed %d: q%.3f = %d, want %d within 1/128", seed, q, got, want)
		}
	}
	if h.Max() != time.Duration(values[len(values)-1]) {
		t.Errorf("max %v, want %v", h.Max(), time.Duration(values[len(values)-1]))
	}
	var empty, merged Histogram
	if empty.Quantile(0.99) != 0 {
		t.Error("empty histogram: quantile not zero")
	}
	merged.Merge(&h)
	merged.Merge(&h)
	if merged.Count() != 2*h.Count() || merged.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merge: count %d p50 %v, want %d %v", merged.Count(), merged.Quantile(0.5), 2*h.Count(), h.Quantile(0.5))
	}
}
