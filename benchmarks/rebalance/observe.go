package rebalance

// What Measure does to the cluster and reads from it: the topic, the
// history, the tiering status, the placement and the agents' metrics.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/twmb/franz-go/pkg/kgo"
)

// requestTimeout bounds each admin request and scrape.
const requestTimeout = 10 * time.Second

// createTopic creates the tiered topic and waits until every partition has
// all its replicas in sync.
func createTopic(ctx context.Context, seeds []string, topic string, cfg Config) error {
	cl, adm, err := loadgen.NewAdmin(seeds)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s := func(v string) *string { return &v }
	resp, err := adm.CreateTopic(ctx, int32(cfg.Partitions), int16(cfg.ReplicationFactor), map[string]*string{
		"segment.bytes":         s(strconv.FormatInt(cfg.SegmentBytes, 10)),
		"local.retention.bytes": s(strconv.FormatInt(cfg.LocalRetentionBytes, 10)),
		"retention.ms":          s("-1"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("rebalance: create topic %s: %w", topic, err)
	}
	for {
		p, err := readPlacement(ctx, adm, topic)
		if err == nil && len(p.partitions) == cfg.Partitions && p.inSync(cfg.ReplicationFactor) {
			return nil
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return fmt.Errorf("rebalance: topic %s not ready: %v (%w)", topic, err, ctx.Err())
		}
	}
}

// produce writes cfg.HistoryBytes of uncompressed random records, acks=all,
// round-robin over the partitions, and returns the value bytes
// acknowledged. The random source is seeded so every run writes the same
// bytes.
func produce(ctx context.Context, seeds []string, topic string, cfg Config) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(1, uint64(cfg.HistoryBytes)))
	var (
		mu       sync.Mutex
		first    error
		produced int64
	)
	for n := int64(0); n < cfg.HistoryBytes; n += int64(cfg.RecordBytes) {
		value := make([]byte, cfg.RecordBytes)
		for i := range value {
			value[i] = byte(rng.Uint32())
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if err == nil {
				produced += int64(len(r.Value))
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return produced, fmt.Errorf("rebalance: produce: %w", first)
	}
	return produced, nil
}

// tieringStatus is one partition's entry in GET /v1/tiering.
type tieringStatus struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	LocalBytes  int64  `json:"local_bytes"`
	RemoteBytes int64  `json:"remote_bytes"`
	RemoteNext  int64  `json:"remote_next_offset"`
	LagSegments int    `json:"upload_lag_segments"`
}

type tiered struct {
	settled                 bool
	localBytes, remoteBytes int64
}

// awaitTiered waits up to cfg.TieringWait until, for every partition, the
// agent that has uploaded the most of it (its leader) has no sealed
// segment left to upload and keeps no more than local.retention.bytes plus
// one segment locally. It reports the sums from that agent's entries.
func awaitTiered(ctx context.Context, agents []*loadgen.Strata, topic string, cfg Config) (tiered, error) {
	deadline := time.Now().Add(cfg.TieringWait)
	for {
		best := map[int32]tieringStatus{}
		for _, a := range agents {
			statuses, err := readTiering(ctx, a.HTTPAddr())
			if err != nil {
				return tiered{}, err
			}
			for _, s := range statuses {
				if s.Topic != topic {
					continue
				}
				if b, ok := best[s.Partition]; !ok || s.RemoteNext > b.RemoteNext {
					best[s.Partition] = s
				}
			}
		}
		t := tiered{settled: len(best) == cfg.Partitions}
		for _, s := range best {
			t.localBytes += s.LocalBytes
			t.remoteBytes += s.RemoteBytes
			if s.LagSegments > 0 || s.LocalBytes > cfg.LocalRetentionBytes+cfg.SegmentBytes {
				t.settled = false
			}
		}
		if t.settled || time.Now().After(deadline) {
			return t, nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return t, err
		}
	}
}

func readTiering(ctx context.Context, httpAddr string) ([]tieringStatus, error) {
	var body struct {
		Partitions []tieringStatus `json:"partitions"`
	}
	err := get(ctx, "http://"+httpAddr+"/v1/tiering", func(resp *http.Response) error {
		return json.NewDecoder(resp.Body).Decode(&body)
	})
	return body.Partitions, err
}

// metrics are the counters Measure reads from an agent's /metrics.
type metrics struct {
	copied         map[string]float64 // strata_replica_copied_bytes_total by topic
	movesStarted   float64            // strata_reassignments_started_total
	movesCompleted float64            // strata_reassignments_completed_total
}

// scrape reads the agent's /metrics.
func scrape(ctx context.Context, httpAddr string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	fams, err := metricstext.Scrape(ctx, "http://"+httpAddr+"/metrics")
	if err != nil {
		return metrics{}, err
	}
	m := metrics{copied: map[string]float64{}}
	for _, s := range fams.Samples("strata_replica_copied_bytes_total") {
		m.copied[s.Labels["topic"]] += s.Value
	}
	m.movesStarted, _ = fams.Value("strata_reassignments_started_total")
	m.movesCompleted, _ = fams.Value("strata_reassignments_completed_total")
	return m, nil
}

func get(ctx context.Context, url string, read func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(resp)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errNotBalanced = errors.New("rebalance: placement not balanced")
