package loadgen

// Compacted topics (--compact, issue 22's benchmark row): the benchmark
// topic is created with cleanup.policy=compact and small segments, and a
// keyed workload (--keys) rewrites a small key space, so that an agent's
// log cleaner works through the whole run. The strata-compaction target is
// two agents from one binary with the same flags, but for the cleaner:
// strata-cleaner runs it, strata-no-cleaner does not
// (--log-cleaner-enable=false), and strata-bench alternates runs between
// them as between any two systems. A Strata run of a compacted topic
// records what the cleaner did meanwhile (CleanerWork), from the agent's
// strata_log_cleaner_* counters.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// System names of the strata-compaction target's two agents.
const (
	SystemStrataCleaner   = "strata-cleaner"
	SystemStrataNoCleaner = "strata-no-cleaner"
)

// compactSegmentBytes is a compacted benchmark topic's segment.bytes: the
// cleaner never touches the active segment, so with Kafka's 1 GiB default
// a run of seconds would give it nothing to clean. At 20,000 records/s of
// 1 KiB a segment seals about five times a second.
const compactSegmentBytes = 4 << 20

// compactTopicConfigs are a compacted benchmark topic's configs; the
// rest (min.cleanable.dirty.ratio 0.5, no compaction lag) are Kafka's
// defaults.
func compactTopicConfigs() map[string]*string {
	v := func(s string) *string { return &s }
	return map[string]*string{
		"cleanup.policy": v("compact"),
		"segment.bytes":  v(fmt.Sprint(compactSegmentBytes)),
	}
}

// CleanerWork is what an agent's log cleaner did during a run, from its
// counters before the produce phase and after the run's last record:
// passes that finished, segment bytes read (each pass reads the dirty
// section to build its offset map, then every sealed segment it
// rewrites), cleaned bytes written, and the seconds its passes took.
// Counters move when a pass ends, so a pass under way at either reading
// counts in the run it ends in, with its bytes and its seconds alike.
type CleanerWork struct {
	Passes       int64   `json:"passes"`
	ReadBytes    int64   `json:"read_bytes"`
	WrittenBytes int64   `json:"written_bytes"`
	Seconds      float64 `json:"seconds"`
	// ReadMBPerSec is ReadBytes over Seconds in 10^6 bytes: the cleaner's
	// speed while it works; 0 when no pass ended in the run.
	ReadMBPerSec float64 `json:"read_mb_per_s"`
}

// cleanerCounters reads, summed over the agents, the cleaner counters
// CleanerWork is made of.
func cleanerCounters(ctx context.Context, addrs []string) (CleanerWork, error) {
	m, err := scrape(ctx, addrs)
	if err != nil {
		return CleanerWork{}, err
	}
	return CleanerWork{
		Passes:       int64(m.sum("strata_log_cleaner_runs_total")),
		ReadBytes:    int64(m.sum("strata_log_cleaner_read_bytes_total")),
		WrittenBytes: int64(m.sum("strata_log_cleaner_written_bytes_total")),
		Seconds:      m.sum("strata_log_cleaner_seconds_total"),
	}, nil
}

// since is what the counters moved from before to w, with the speed.
func (w CleanerWork) since(before CleanerWork) CleanerWork {
	d := CleanerWork{Passes: w.Passes - before.Passes, ReadBytes: w.ReadBytes - before.ReadBytes,
		WrittenBytes: w.WrittenBytes - before.WrittenBytes, Seconds: w.Seconds - before.Seconds}
	if d.Seconds > 0 {
		d.ReadMBPerSec = float64(d.ReadBytes) / d.Seconds / 1e6
	}
	return d
}

// StartStrataCompaction starts the strata-compaction target's two agents
// as StartStrata does, each with opts.Args and then its cleaner setting,
// and returns them as the systems strata-cleaner and strata-no-cleaner.
// Each is closed on its own (both must be).
func StartStrataCompaction(ctx context.Context, opts StrataOptions) ([]Target, error) {
	var out []Target
	for _, c := range []struct {
		system string
		enable bool
	}{{SystemStrataCleaner, true}, {SystemStrataNoCleaner, false}} {
		o := opts
		o.Args = append(append([]string{}, opts.Args...), fmt.Sprintf("--log-cleaner-enable=%t", c.enable))
		if opts.Dir != "" {
			// Two agents, two data directories.
			o.Dir = filepath.Join(opts.Dir, c.system)
			if err := os.MkdirAll(o.Dir, 0o755); err != nil {
				return nil, err
			}
		}
		agent, err := StartStrata(ctx, o)
		if err != nil {
			for _, t := range out {
				_ = t.Close()
			}
			return nil, fmt.Errorf("%s: %w", c.system, err)
		}
		out = append(out, strataListener{Strata: agent, system: c.system, addr: agent.KafkaAddr()})
	}
	return out, nil
}
