package abuse

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testagent"
)

const (
	// soakDurationEnv sets how long TestSoak produces; defaultSoak when
	// unset. Longer runs:
	//
	//	STRATA_SOAK_DURATION=30m go test -v -run TestSoak -timeout 0 ./internal/abuse/
	soakDurationEnv = "STRATA_SOAK_DURATION"
	defaultSoak     = 20 * time.Second

	soakValueBytes  = 512
	soakPartitions  = 3
	soakSampleEvery = time.Second
	// soakTableRows bounds the printed sample table; a long run prints
	// every n-th sample.
	soakTableRows = 40

	// Growth allowed from the median of the middle third of the samples
	// to the median of the last third: a factor plus an absolute slack,
	// because a short run's medians are noisy and memory moves with the
	// garbage collector's cycle. Something that leaks per record or per
	// request still fails: over a long run it grows far past both.
	soakGrowthFactor = 1.5
	soakRSSSlack     = 64 << 20
	soakGoroutSlack  = 20
	soakFDSlack      = 16
)

// soakTopicConfigs bound the disk a soak fills: 4 MiB segments, and 16 MiB
// kept per partition, applied every soakRetentionCheck. At the rates seen
// (8 MiB/s under -race, 25 MiB/s without, over three partitions) retention
// deletes from the sixth second or sooner, so even the short run reaches
// the steady state whose growth it measures within its first third, and
// the open-files check covers segments being rolled and deleted. The
// consumer trails the producer by far less than 16 MiB, so nothing it has
// not read is deleted.
var soakTopicConfigs = map[string]*string{
	"segment.bytes":   ptr("4194304"),
	"retention.bytes": ptr("16777216"),
}

const soakRetentionCheck = "1s"

func ptr(s string) *string { return &s }

// dirBytes is the size of the files under dir; files removed while it
// walks are skipped.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// TestSoak: see the package doc.
func TestSoak(t *testing.T) {
	duration := defaultSoak
	if s := os.Getenv(soakDurationEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 3*soakSampleEvery {
			t.Fatalf("%s=%q: want a duration of at least %v", soakDurationEnv, s, 3*soakSampleEvery)
		}
		duration = d
	}
	t.Logf("soak for %v (%s sets it)", duration, soakDurationEnv)

	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--retention-check-interval", soakRetentionCheck}})
	pid := a.PID()
	w := startWorkload(t, a.Addr(), "soak", soakPartitions, soakTopicConfigs, soakValueBytes, 0)

	type row struct {
		sample
		acked, read int64
		disk        int64
	}
	var (
		mu      sync.Mutex
		rows    []row
		sampErr error
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(soakSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			s, err := takeSample(pid, a.HTTPAddr())
			mu.Lock()
			if err != nil {
				sampErr = err
			} else {
				s.at = time.Since(start)
				rows = append(rows, row{s, w.ackedN.Load(), w.readN.Load(), dirBytes(a.DataDir())})
			}
			mu.Unlock()
		}
	}()
	timer := time.NewTimer(duration)
	<-timer.C
	close(stop)
	<-sampled
	elapsed := time.Since(start)
	acked, ackedBytes, read := w.ackedN.Load(), w.ackedBytes.Load(), w.readN.Load()
	w.finish(t)

	mu.Lock()
	defer mu.Unlock()
	if sampErr != nil {
		t.Errorf("sampling the agent: %v", sampErr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %10s %10s %10s %10s %6s %12s %12s %11s\n", "t", "rss", "max_rss", "heap", "goroutines", "fds", "acked", "read", "data_dir")
	every := max(1, (len(rows)+soakTableRows-1)/soakTableRows)
	for i, r := range rows {
		if i%every == 0 || i == len(rows)-1 {
			fmt.Fprintf(&b, "%8s %10s %10s %10s %10d %6d %12d %12d %11s\n", r.at.Round(time.Second), mib(r.rss), mib(r.hwm), mib(r.heapInuse), r.goroutines, r.fds, r.acked, r.read, mib(r.disk))
		}
	}
	t.Logf("samples:\n%s", b.String())
	secs := elapsed.Seconds()
	t.Logf("throughput: produced %.0f records/s (%.1f MiB/s of values), consumed %.0f records/s, over %v",
		float64(acked)/secs, float64(ackedBytes)/secs/(1<<20), float64(read)/secs, elapsed.Round(time.Millisecond))
	if len(rows) < 6 {
		t.Fatalf("%d samples; need at least 6 to compare thirds", len(rows))
	}
	third := len(rows) / 3
	mid, last := rows[third:2*third], rows[len(rows)-third:]
	for _, m := range []struct {
		name  string
		get   func(row) int64
		slack int64
		show  func(int64) string
	}{
		{"rss", func(r row) int64 { return r.rss }, soakRSSSlack, mib},
		{"goroutines", func(r row) int64 { return int64(r.goroutines) }, soakGoroutSlack, func(n int64) string { return fmt.Sprint(n) }},
		{"open files", func(r row) int64 { return int64(r.fds) }, soakFDSlack, func(n int64) string { return fmt.Sprint(n) }},
	} {
		var a, b []int64
		for _, r := range mid {
			a = append(a, m.get(r))
		}
		for _, r := range last {
			b = append(b, m.get(r))
		}
		ma, mb := median(a), median(b)
		limit := int64(float64(ma)*soakGrowthFactor) + m.slack
		t.Logf("%-10s median of middle third %s, of last third %s, limit %s", m.name, m.show(ma), m.show(mb), m.show(limit))
		if mb > limit {
			t.Errorf("%s grew from %s to %s between the middle and the last third of the soak (limit %s)", m.name, m.show(ma), m.show(mb), m.show(limit))
		}
	}
	last1 := rows[len(rows)-1]
	t.Logf("max RSS (VmHWM) %s", mib(last1.hwm))
}
