package loadgen

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/metricstext"
)

// TestDisklessSmoke: a second of paced e2e load on each system of a
// strata-diskless target. The agent's own view says which topic was
// diskless (its diskless.enable config); the diskless run's timed phase
// stored commit objects, one PUT each at least, holding at least the
// acknowledged record bytes, with commit times; the classic run's stored
// none.
func TestDisklessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary and starts MinIO")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	targets, err := StartStrataDiskless(ctx, StrataOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		t.Cleanup(func() {
			if err := target.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if len(targets) != 2 || targets[0].System() != SystemStrataClassic || targets[1].System() != SystemStrataDiskless {
		t.Fatalf("targets %v", targets)
	}
	for _, target := range targets {
		t.Run(target.System(), func(t *testing.T) {
			diskless := target.System() == SystemStrataDiskless
			cfg := DefaultConfig()
			cfg.Scenario, cfg.Mode, cfg.Rate, cfg.Duration, cfg.Partitions = "diskless", ModeEndToEnd, 400, time.Second, 2
			cfg.inspect = func(ctx context.Context, topic string) {
				cl, err := kgo.NewClient(kgo.SeedBrokers(target.Seeds()...))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				rc, err := rcs.On(topic, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := "false"
				for _, c := range rc.Configs {
					if c.Key == "diskless.enable" && c.Value != nil {
						got = *c.Value
					}
				}
				if (got == "true") != diskless {
					t.Errorf("topic %s of %s: diskless.enable=%s", topic, target.System(), got)
				}
			}
			res, err := Run(ctx, target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Summary())
			checkResult(t, cfg, res)
			w := res.StoreWrites
			switch {
			case w == nil:
				t.Fatal("no store writes in the result of a strata-diskless run")
			case w.Seconds <= 0 || w.Bytes != res.Bytes:
				t.Errorf("store writes %+v: want a timed window and the run's %d bytes", *w, res.Bytes)
			case !diskless && (w.Objects != 0 || w.ObjectBytes != 0):
				t.Errorf("the classic topic's run stored diskless objects: %+v", *w)
			case diskless && (w.Objects < 1 || w.Puts < w.Objects || w.ObjectBytes < w.Bytes):
				t.Errorf("store writes %+v: want objects, a PUT each, holding at least the %d record bytes", *w, w.Bytes)
			case diskless && (w.CommitP50Ms <= 0 || w.CommitP50Ms > w.CommitP99Ms):
				t.Errorf("commit p50 %v ms, p99 %v ms: want 0 < p50 <= p99", w.CommitP50Ms, w.CommitP99Ms)
			case diskless && math.Abs(w.PutsPerGiB-float64(w.Puts)/(float64(w.Bytes)/(1<<30))) > 1e-9*w.PutsPerGiB:
				t.Errorf("%v PUTs per GiB, but %d PUTs for %d bytes", w.PutsPerGiB, w.Puts, w.Bytes)
			}
		})
	}
}

// TestStoreWritesSince: the counters' differences, the rates, and the
// commit quantiles interpolated in the buckets' differences, summed over
// two agents.
func TestStoreWritesSince(t *testing.T) {
	exposition := func(puts, objects, bytes int, buckets [3]int) metricstext.Families {
		t.Helper()
		var b strings.Builder
		b.WriteString("# TYPE strata_store_requests_total counter\n")
		b.WriteString(`strata_store_requests_total{backend="s3",op="put",outcome="ok"} ` + strconv.Itoa(puts) + "\n")
		b.WriteString(`strata_store_requests_total{backend="s3",op="get",outcome="ok"} 999` + "\n")
		b.WriteString("# TYPE strata_diskless_objects_uploaded_total counter\nstrata_diskless_objects_uploaded_total " + strconv.Itoa(objects) + "\n")
		b.WriteString("# TYPE strata_diskless_object_bytes_total counter\nstrata_diskless_object_bytes_total " + strconv.Itoa(bytes) + "\n")
		b.WriteString("# TYPE strata_diskless_commit_seconds histogram\n")
		for i, le := range []string{"0.01", "0.02", "0.04"} {
			b.WriteString(`strata_diskless_commit_seconds_bucket{le="` + le + `"} ` + strconv.Itoa(buckets[i]) + "\n")
		}
		b.WriteString(`strata_diskless_commit_seconds_bucket{le="+Inf"} ` + strconv.Itoa(buckets[2]) + "\n")
		b.WriteString("strata_diskless_commit_seconds_sum 1\nstrata_diskless_commit_seconds_count " + strconv.Itoa(buckets[2]) + "\n")
		f, err := metricstext.Parse(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	at := time.Unix(1000, 0)
	read := func(at time.Time, agents ...metricstext.Families) storeWriteCounters {
		m := agentMetrics(agents)
		return storeWriteCounters{at: at, puts: m.sum("strata_store_requests_total", "op", "put"),
			objects: m.sum("strata_diskless_objects_uploaded_total"), objectBytes: m.sum("strata_diskless_object_bytes_total"),
			commit: m.histogram("strata_diskless_commit_seconds")}
	}
	before := read(at, exposition(10, 8, 1000, [3]int{5, 5, 8}), exposition(1, 0, 0, [3]int{0, 0, 0}))
	// Over 2 s: 10 more PUTs, 8 more objects; of the 8 new commits, 4 in
	// (0, 10 ms] and 4 in (20, 40 ms].
	after := read(at.Add(2*time.Second), exposition(18, 14, 5000, [3]int{9, 9, 14}), exposition(3, 2, 1000, [3]int{0, 0, 2}))
	w := after.since(before, 1<<29)
	want := StoreWrites{Seconds: 2, Puts: 10, Objects: 8, ObjectBytes: 5000, Bytes: 1 << 29, PutsPerSec: 5, PutsPerGiB: 20,
		// p50: rank 4 of 8 is the top of the first bucket; p99: rank
		// 7.92 is 3.92 of the 4 in (20, 40 ms].
		CommitP50Ms: 10, CommitP99Ms: 20 + 20*3.92/4}
	if math.Abs(w.CommitP99Ms-want.CommitP99Ms) < 1e-9 {
		w.CommitP99Ms = want.CommitP99Ms
	}
	if w != want {
		t.Errorf("since:\n got %+v\nwant %+v", w, want)
	}
	// No commit in the window: no quantile.
	if w := before.since(before, 0); w.CommitP50Ms != 0 || w.CommitP99Ms != 0 || w.PutsPerGiB != 0 {
		t.Errorf("an empty window: %+v", w)
	}
}

// TestDisklessValidate: --diskless is refused where the agent would
// refuse the topic (compacted, catchup-store's local retention).
func TestDisklessValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"produce", func(c *Config) {}, true},
		{"e2e", func(c *Config) { c.Mode, c.Rate = ModeEndToEnd, 100 }, true},
		{"catchup", func(c *Config) { c.Mode, c.Records = ModeCatchUp, 100 }, true},
		{"catchup-store", func(c *Config) { c.Mode, c.Records = ModeCatchUpStore, 100 }, false},
		{"compact", func(c *Config) { c.Compact, c.Keys = true, 10 }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Diskless = true
			tt.edit(&c)
			if err := c.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate: %v, want ok %t", err, tt.ok)
			}
			if !strings.HasSuffix(c.name(), "/diskless") {
				t.Errorf("scenario name %q does not say diskless", c.name())
			}
		})
	}
}
