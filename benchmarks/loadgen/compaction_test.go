package loadgen

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestCompactionSmoke: a keyed run on a compacted topic against the
// strata-compaction target's two agents. Every record is accepted (a
// compacted topic refuses records without keys, warm-up ones included);
// the run with the cleaner records passes that read and wrote bytes over
// a measured time, and the one without records none.
func TestCompactionSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// The build is cached after the first run: seconds.
	bin, err := BuildStrata(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := StartStrataCompaction(ctx, StrataOptions{Binary: bin, Dir: dir, Args: []string{"--log-cleaner-backoff=50ms"}})
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
	if len(targets) != 2 || targets[0].System() != SystemStrataCleaner || targets[1].System() != SystemStrataNoCleaner {
		t.Fatalf("targets %v", targets)
	}
	for _, target := range targets {
		t.Run(target.System(), func(t *testing.T) {
			cfg := DefaultConfig()
			// 6,000 records of 1 KiB seal one 4 MiB segment, which the
			// cleaner may clean: 100 keys leave 100 records of it.
			cfg.Scenario, cfg.Records, cfg.Keys, cfg.Compact = "compaction", 6000, 100, true
			cleaner := target.System() == SystemStrataCleaner
			cfg.inspect = func(ctx context.Context, topic string) {
				if !cleaner {
					return
				}
				// Wait for the pass, so that the run's counters hold it.
				addrs := target.(storeMetered).metricsAddrs()
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
					w, err := cleanerCounters(ctx, addrs)
					if err != nil {
						t.Error(err)
						return
					}
					if w.Passes > 0 {
						return
					}
					if sleep(ctx, 50*time.Millisecond) != nil {
						return
					}
				}
				t.Error("the cleaner finished no pass within 30 s")
			}
			res, err := Run(ctx, target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Summary())
			checkResult(t, cfg, res)
			w := res.Cleaner
			switch {
			case w == nil:
				t.Fatal("no cleaner work in the result of a compacted topic on Strata")
			case !cleaner && *w != CleanerWork{}:
				t.Errorf("the agent without a cleaner cleaned: %+v", *w)
			case cleaner && (w.Passes < 1 || w.ReadBytes <= 0 || w.WrittenBytes <= 0 || w.WrittenBytes >= w.ReadBytes || w.Seconds <= 0):
				t.Errorf("cleaner work %+v: want a pass that read more than it wrote, in measured time", *w)
			case cleaner && math.Abs(w.ReadMBPerSec-float64(w.ReadBytes)/w.Seconds/1e6) > 1e-9*w.ReadMBPerSec:
				t.Errorf("cleaner speed %v MB/s, but %d bytes in %v s", w.ReadMBPerSec, w.ReadBytes, w.Seconds)
			}
		})
	}
}

// TestCompactNeedsKeys: --compact without --keys, or in a catch-up mode,
// is refused before anything runs.
func TestCompactNeedsKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Compact = true
	if err := cfg.Validate(); err == nil {
		t.Error("--compact without --keys accepted")
	}
	cfg.Keys, cfg.Mode, cfg.Records = 10, ModeCatchUp, 100
	if err := cfg.Validate(); err == nil {
		t.Error("--compact in catchup mode accepted")
	}
	cfg.Mode = ModeProduce
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
