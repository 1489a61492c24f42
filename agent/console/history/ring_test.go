package history

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0) // a multiple of 5 s

func approx(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

func seriesOf(a Agent, k Key) Values {
	for _, s := range a.Series {
		if s.Key() == k {
			return s.Values
		}
	}
	return nil
}

func checkValues(t *testing.T, what string, got, want Values) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if !approx(got[i], want[i]) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}

func TestDelta(t *testing.T) {
	for _, c := range []struct{ cur, prev, want float64 }{
		{10, 4, 6}, {4, 4, 0}, {3, 4, math.NaN()}, {5, 0, 5},
	} {
		if got := Delta(c.cur, c.prev); !approx(got, c.want) {
			t.Errorf("Delta(%v, %v) = %v, want %v", c.cur, c.prev, got, c.want)
		}
	}
}

func TestIntervalQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1, 1}
	h := func(count float64, cum ...float64) Histogram {
		return Histogram{Bounds: bounds, Cumulative: cum, Count: count}
	}
	nan := math.NaN()
	for _, c := range []struct {
		name      string
		q         float64
		cur, prev Histogram
		want      float64
	}{
		// 100 new observations: 50 up to 1 ms, 40 more up to 10 ms, 10 up to 100 ms.
		{"median at a bucket's top", 0.5, h(100, 50, 90, 100, 100), Histogram{}, 0.001},
		{"p90", 0.9, h(100, 50, 90, 100, 100), Histogram{}, 0.01},
		{"p99 inside a bucket", 0.99, h(100, 50, 90, 100, 100), Histogram{}, 0.01 + 0.09*0.9},
		{"p25 inside the first bucket", 0.25, h(100, 50, 90, 100, 100), Histogram{}, 0.0005},
		{"only the interval's", 0.5, h(200, 50, 190, 200, 200), h(100, 50, 90, 100, 100), 0.01 * 0.5 * 1.1},
		{"past the last bound", 0.99, h(10, 0, 0, 0, 5), Histogram{}, 1},
		{"no observation", 0.5, h(100, 50, 90, 100, 100), h(100, 50, 90, 100, 100), nan},
		{"a reset", 0.5, h(10, 5, 9, 10, 10), h(100, 50, 90, 100, 100), nan},
		{"other bounds", 0.5, h(100, 50, 90, 100, 100), Histogram{Bounds: []float64{1, 2, 3, 4}, Cumulative: []float64{0, 0, 0, 0}}, nan},
		{"no histogram", 0.5, Histogram{}, Histogram{}, nan},
	} {
		if got := IntervalQuantile(c.q, c.cur, c.prev); !approx(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRingRates: counters become rates over the time between samples,
// histograms the interval's percentiles, gauges stay as they are; the
// first sample has no rates.
func TestRingRates(t *testing.T) {
	r := NewRing(DefaultConfig())
	lat := func(count float64, cum ...float64) Histogram {
		return Histogram{Bounds: []float64{0.001, 0.01, 0.1}, Cumulative: cum, Count: count}
	}
	r.Add(Sample{At: t0.Add(100 * time.Millisecond), Topics: map[string]TopicCounters{"t": {BytesIn: 1000, RecordsIn: 10}},
		StoreRequests: map[string]float64{"put": 4}, StoreBytes: map[string]float64{"write": 100}, BucketBytes: 7,
		ProduceLatency: lat(10, 10, 10, 10), Fsyncs: 2, FsyncSeconds: 0.002, ISRShrinks: 1,
		HighWatermarks: map[Partition]int64{{"t", 0}: 5_000_000_000}})
	r.Add(Sample{At: t0.Add(5100 * time.Millisecond), Topics: map[string]TopicCounters{"t": {BytesIn: 6000, BytesOut: 500, RecordsIn: 60}},
		StoreRequests: map[string]float64{"put": 14, "get": 5}, StoreBytes: map[string]float64{"write": 600}, BucketBytes: 9,
		ProduceLatency: lat(20, 20, 20, 20), Fsyncs: 12, FsyncSeconds: 0.032, ISRShrinks: 3,
		HighWatermarks: map[Partition]int64{{"t", 0}: 5_000_000_100}})
	// A counter that went down (the topic made anew): no rate, not a negative one.
	r.Add(Sample{At: t0.Add(10100 * time.Millisecond), Topics: map[string]TopicCounters{"t": {BytesIn: 10, BytesOut: 1500, RecordsIn: 1}},
		StoreRequests: map[string]float64{"put": 14, "get": 5}, StoreBytes: map[string]float64{"write": 600}, BucketBytes: 9,
		ProduceLatency: lat(20, 20, 20, 20), Fsyncs: 12, FsyncSeconds: 0.032, ISRShrinks: 3})

	a := r.Since(0)
	want := []int64{t0.UnixMilli(), t0.UnixMilli() + 5000, t0.UnixMilli() + 10000}
	if fmt.Sprint(a.Times) != fmt.Sprint(want) {
		t.Fatalf("times %v, want the slots %v", a.Times, want)
	}
	nan := math.NaN()
	topic := func(m string) Key { return Key{Metric: m, Topic: "t", Partition: -1} }
	one := func(m, label string) Key { return Key{Metric: m, Partition: -1, Label: label} }
	checkValues(t, "bytes in", seriesOf(a, topic(TopicBytesIn)), Values{nan, 1000, nan})
	checkValues(t, "bytes out", seriesOf(a, topic(TopicBytesOut)), Values{nan, 100, 200})
	checkValues(t, "records in", seriesOf(a, topic(TopicRecordsIn)), Values{nan, 10, nan})
	checkValues(t, "store puts", seriesOf(a, one(StoreRequests, "put")), Values{nan, 2, 0})
	checkValues(t, "store gets", seriesOf(a, one(StoreRequests, "get")), Values{nan, 1, 0})
	checkValues(t, "store writes", seriesOf(a, one(StoreBytes, "write")), Values{nan, 100, 0})
	checkValues(t, "bucket bytes", seriesOf(a, one(BucketBytes, "")), Values{7, 9, 9})
	checkValues(t, "p50", seriesOf(a, one(ProduceP50, "")), Values{nan, 0.0005, nan})
	checkValues(t, "fsyncs", seriesOf(a, one(Fsyncs, "")), Values{nan, 2, 0})
	checkValues(t, "fsync mean", seriesOf(a, one(FsyncMean, "")), Values{nan, 0.003, nan})
	checkValues(t, "ISR shrinks", seriesOf(a, one(ISRShrinks, "")), Values{nan, 2, 0})
	checkValues(t, "high watermark", seriesOf(a, Key{Metric: HighWatermark, Topic: "t", Partition: 0}), Values{5_000_000_000, 5_000_000_100, nan})

	// Since leaves out the points up to its time.
	if b := r.Since(want[1]); len(b.Times) != 1 || len(seriesOf(b, topic(TopicBytesOut))) != 1 {
		t.Errorf("since the second point: times %v, series %+v", b.Times, b.Series)
	}
}

// TestRingSlots: a second sample in a slot replaces the first; the
// ring keeps the newest Points points, in order.
func TestRingSlots(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Points = 4
	r := NewRing(cfg)
	gauge := func(at time.Time, v float64) { r.Add(Sample{At: at, BucketBytes: v}) }
	gauge(t0, 1)
	gauge(t0.Add(time.Second), 2) // same slot
	if a := r.Since(0); len(a.Times) != 1 || a.Series[0].Values[0] != 2 {
		t.Fatalf("after two samples in one slot: %+v", a)
	}
	gauge(t0.Add(-time.Minute), 3) // a clock that went back: the newest point again
	for i := 1; i <= 6; i++ {
		gauge(t0.Add(time.Duration(i)*5*time.Second), float64(10+i))
	}
	a := r.Since(0)
	if r.Len() != 4 || len(a.Times) != 4 || a.Times[0] != t0.UnixMilli()+15000 || a.Times[3] != t0.UnixMilli()+30000 {
		t.Fatalf("times %v, want the last four slots", a.Times)
	}
	checkValues(t, "bucket bytes", a.Series[0].Values, Values{13, 14, 15, 16})
}

// TestRingCaps: past MaxTopics a topic's traffic is summed as
// OtherTopics; past the offset caps nothing is kept and Dropped counts
// it; a series with no value left in the ring is dropped, which frees
// its place.
func TestRingCaps(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Points, cfg.MaxTopics, cfg.MaxPartitions, cfg.MaxGroupPartitions = 3, 2, 1, 1
	r := NewRing(cfg)
	bytesIn := func(step int, topics ...string) Sample {
		s := Sample{At: t0.Add(time.Duration(step) * 5 * time.Second), Topics: map[string]TopicCounters{},
			HighWatermarks: map[Partition]int64{{"a", 0}: 1, {"a", 1}: 1}, Committed: map[GroupPartition]int64{{"g", Partition{"a", 0}}: 1, {"h", Partition{"a", 0}}: 1}}
		for _, name := range topics {
			s.Topics[name] = TopicCounters{BytesIn: float64(step) * 5}
		}
		return s
	}
	r.Add(bytesIn(0, "a", "b", "c", "d"))
	r.Add(bytesIn(1, "a", "b", "c", "d"))
	a := r.Since(0)
	in := func(topic string) Values { return seriesOf(a, Key{Metric: TopicBytesIn, Topic: topic, Partition: -1}) }
	nan := math.NaN()
	checkValues(t, "a", in("a"), Values{nan, 1})
	checkValues(t, "c", in("c"), nil)
	checkValues(t, "other", in(OtherTopics), Values{nan, 2})
	if d := r.Dropped(); d != (Dropped{Topics: 2, Partitions: 1, GroupPartitions: 1}) {
		t.Errorf("dropped %+v", d)
	}
	// a and b stop; once their points have left the ring, c and d get
	// series of their own.
	for step := 2; step < 6; step++ {
		r.Add(bytesIn(step, "c", "d"))
	}
	a = r.Since(0)
	checkValues(t, "a, gone", in("a"), nil)
	checkValues(t, "c, now its own", in("c"), Values{nan, 1, 1})
	checkValues(t, "other, c and d still in it", in(OtherTopics), Values{2, nan, nan})
	if d := r.Dropped(); d.Topics != 0 {
		t.Errorf("dropped %+v, want no topic", d)
	}
}

// TestRingOffsetsExact: offsets are kept exactly whatever their size,
// and one that jumps by more than an int32 leaves the points too far
// from it without a value rather than wrong.
func TestRingOffsetsExact(t *testing.T) {
	r := NewRing(DefaultConfig())
	p := Partition{"t", 3}
	offsets := []int64{1 << 40, 1<<40 + 1, 1<<40 + 123456789, 5, 6}
	for i, o := range offsets {
		r.Add(Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), HighWatermarks: map[Partition]int64{p: o}})
	}
	nan := math.NaN()
	got := seriesOf(r.Since(0), Key{Metric: HighWatermark, Topic: "t", Partition: 3})
	checkValues(t, "offsets", got, Values{nan, nan, nan, 5, 6})
	r2 := NewRing(DefaultConfig())
	for i, o := range offsets[:3] {
		r2.Add(Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), HighWatermarks: map[Partition]int64{p: o}})
	}
	got = seriesOf(r2.Since(0), Key{Metric: HighWatermark, Topic: "t", Partition: 3})
	checkValues(t, "large offsets", got, Values{1 << 40, 1<<40 + 1, 1<<40 + 123456789})
}

// TestRingBoundedThousandPartitions fills a ring for an hour with an
// agent that leads 1,000 partitions of 10 topics and coordinates a group
// that reads all of them, prints its bytes (the estimate and the heap
// it holds), and checks that 5,000 partitions cost no more than the caps.
func TestRingBoundedThousandPartitions(t *testing.T) {
	measure := func(partitions, steps int) (estimate, heap int64, series int) {
		cfg := DefaultConfig()
		s := Sample{Topics: map[string]TopicCounters{}, StoreRequests: map[string]float64{}, StoreBytes: map[string]float64{},
			ProduceLatency: Histogram{Bounds: make([]float64, 18), Cumulative: make([]float64, 18)},
			HighWatermarks: map[Partition]int64{}, Committed: map[GroupPartition]int64{}}
		for i := range s.ProduceLatency.Bounds {
			s.ProduceLatency.Bounds[i] = 0.0001 * math.Pow(2, float64(i))
		}
		topics := 10
		for p := range partitions {
			part := Partition{fmt.Sprintf("topic-%02d", p%topics), int32(p / topics)}
			s.HighWatermarks[part] = 0
			s.Committed[GroupPartition{"readers", part}] = 0
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := NewRing(cfg)
		for step := range steps {
			s.At = t0.Add(time.Duration(step) * cfg.Resolution)
			for i := range topics {
				s.Topics[fmt.Sprintf("topic-%02d", i)] = TopicCounters{BytesIn: float64(step) * 1e6, BytesOut: float64(step) * 2e6, RecordsIn: float64(step) * 1e3, RecordsOut: float64(step) * 2e3}
			}
			for _, op := range []string{"get", "get_range", "put", "delete", "stat", "list"} {
				s.StoreRequests[op] = float64(step) * 3
			}
			s.StoreBytes["write"], s.StoreBytes["read"] = float64(step)*1e6, float64(step)*1e5
			for i := range s.ProduceLatency.Cumulative {
				s.ProduceLatency.Cumulative[i] = float64(step * (i + 1))
			}
			s.ProduceLatency.Count = float64(step * 18)
			s.Fsyncs, s.FsyncSeconds = float64(step)*50, float64(step)*0.1
			for p := range s.HighWatermarks {
				s.HighWatermarks[p] = int64(step) * 1000
			}
			for gp := range s.Committed {
				s.Committed[gp] = int64(step)*1000 - 500
			}
			r.Add(s)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		estimate, series = r.Bytes(), r.Series()
		runtime.KeepAlive(r)
		return estimate, int64(after.HeapAlloc) - int64(before.HeapAlloc), series
	}
	estimate, heap, series := measure(1000, DefaultConfig().Points+10)
	t.Logf("1,000 partitions (10 topics, one group reading all), an hour at 5 s: %d series, ring bytes %d (%.1f MiB) estimated, %d (%.1f MiB) measured on the heap",
		series, estimate, float64(estimate)/(1<<20), heap, float64(heap)/(1<<20))
	if estimate > 8<<20 {
		t.Errorf("the ring holds %d bytes: more than 8 MiB", estimate)
	}
	if d := float64(estimate-heap) / float64(heap); math.Abs(d) > 0.25 {
		t.Errorf("the estimate %d is %.0f%% off the heap's %d", estimate, 100*d, heap)
	}
	estimate5k, heap5k, series5k := measure(5000, 20) // the series are made whole at once
	t.Logf("5,000 partitions: %d series, ring bytes %d estimated, %d measured", series5k, estimate5k, heap5k)
	if estimate5k > estimate+estimate/10 {
		t.Errorf("5,000 partitions cost %d bytes, 1,000 cost %d: the caps do not bound the ring", estimate5k, estimate)
	}
}
