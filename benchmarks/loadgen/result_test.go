package loadgen

import "testing"

func TestMedian(t *testing.T) {
	run := func(rate, p50, p99 float64, errs int64, e2e bool) Result {
		r := Result{System: "s", RecordsPerSec: rate, Errors: errs, Produce: Latency{P50: p50, P99: p99}}
		if e2e {
			r.EndToEnd = &Latency{P50: p50 * 2, P99: p99 * 2}
		}
		return r
	}
	tests := []struct {
		name                   string
		runs                   []Result
		rate, p50, p99, e2eP99 float64
		errors                 int64
		withEndToEnd           bool
	}{
		{"one run", []Result{run(10, 1, 2, 0, false)}, 10, 1, 2, 0, 0, false},
		// Each number is its own median: the p99 comes from a run that has
		// neither the median rate nor the median p50.
		{"fields apart", []Result{run(10, 3, 9, 0, true), run(30, 1, 5, 1, true), run(20, 2, 7, 2, true)}, 20, 2, 7, 14, 3, true},
		{"even count takes the lower middle", []Result{run(40, 4, 8, 0, false), run(10, 1, 2, 0, false), run(30, 3, 6, 0, false), run(20, 2, 4, 0, false)}, 20, 2, 4, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Median(tt.runs)
			if m.RecordsPerSec != tt.rate || m.Produce.P50 != tt.p50 || m.Produce.P99 != tt.p99 || m.Errors != tt.errors {
				t.Errorf("Median: rate %v p50 %v p99 %v errors %d; want %v %v %v %d",
					m.RecordsPerSec, m.Produce.P50, m.Produce.P99, m.Errors, tt.rate, tt.p50, tt.p99, tt.errors)
			}
			if (m.EndToEnd != nil) != tt.withEndToEnd || (m.EndToEnd != nil && m.EndToEnd.P99 != tt.e2eP99) {
				t.Errorf("Median: e2e %+v, want p99 %v", m.EndToEnd, tt.e2eP99)
			}
		})
	}
}
