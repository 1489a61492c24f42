package rebalance

// The hot-partition join (issue 31, item 3): whether a join evens out
// the agents' measured load, not only their replica counts, when one
// partition takes HotFactor times the others' rate.
//
// MeasureHot starts HotConfig.Agents agents with --rebalance-by Mode,
// creates a tiered topic (so that local disk stays small and network is
// what placement weighs), and produces to every partition at ColdRate
// bytes per second, partition 0 at HotFactor times that, acks=all. After
// Warmup (long enough for every replica's load report to count as
// settled) it starts one more agent and waits until the placement has
// settled: every agent live, every replica in sync, no move in flight,
// and replicas and leaders unchanged for Quiet. It then waits MeasureDelay
// for the moving averages (about 20 s time constant) to follow the new
// placement and reads each agent's strata_agent_in_bytes_per_second and
// strata_agent_out_bytes_per_second, Samples times, and reports the
// largest agent's in+out over the smallest's.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
	"github.com/strata-streaming/strata/internal/metricstext"
)

// HotConfig is one hot-partition measurement.
type HotConfig struct {
	// Binary is a built strata binary; empty builds ./cmd/strata.
	Binary string
	// Mode is the agents' --rebalance-by: load or count.
	Mode string
	// Agents is the cluster's size before the join.
	Agents            int
	Partitions        int
	ReplicationFactor int
	// RecordBytes is each record's value size; ColdRate the bytes per
	// second produced to each partition but partition 0, which gets
	// HotFactor times as much.
	RecordBytes int
	ColdRate    int
	HotFactor   int
	// Warmup is how long the producers run before the join.
	Warmup time.Duration
	// LoadReportInterval is the agents' --load-report-interval.
	LoadReportInterval time.Duration
	// Quiet is how long the placement must stay unchanged, with every
	// replica in sync and no move in flight, to count as settled;
	// SettleTimeout bounds the wait for it.
	Quiet, SettleTimeout time.Duration
	// MeasureDelay is the wait between settling and the first reading of
	// the agents' load; Samples readings are taken SampleInterval apart
	// and averaged.
	MeasureDelay   time.Duration
	Samples        int
	SampleInterval time.Duration
}

// DefaultHotConfig is 3 agents joined by a 4th; 24 partitions of 2
// replicas; 4 KiB records at 100 KiB/s a partition, 1 MiB/s for the hot
// one (3.3 MiB/s produced, 6.6 MiB/s written).
func DefaultHotConfig() HotConfig {
	return HotConfig{
		Mode:               "load",
		Agents:             3,
		Partitions:         24,
		ReplicationFactor:  2,
		RecordBytes:        4 << 10,
		ColdRate:           100 << 10,
		HotFactor:          10,
		Warmup:             90 * time.Second,
		LoadReportInterval: 5 * time.Second,
		Quiet:              30 * time.Second,
		SettleTimeout:      5 * time.Minute,
		MeasureDelay:       60 * time.Second,
		Samples:            5,
		SampleInterval:     2 * time.Second,
	}
}

// Validate names the first bad field.
func (c HotConfig) Validate() error {
	switch {
	case c.Mode != "load" && c.Mode != "count":
		return fmt.Errorf("rebalance: Mode %q: want load or count", c.Mode)
	case c.Agents < 1 || c.Partitions < 1:
		return fmt.Errorf("rebalance: %d agents, %d partitions: want at least 1 of each", c.Agents, c.Partitions)
	case c.ReplicationFactor < 1 || c.ReplicationFactor > c.Agents:
		return fmt.Errorf("rebalance: ReplicationFactor %d: want 1 to Agents (%d)", c.ReplicationFactor, c.Agents)
	case c.RecordBytes < 1 || c.ColdRate < c.RecordBytes || c.HotFactor < 1:
		return fmt.Errorf("rebalance: RecordBytes %d, ColdRate %d, HotFactor %d: want a record a second or more", c.RecordBytes, c.ColdRate, c.HotFactor)
	case c.Warmup <= 0 || c.LoadReportInterval < time.Second || c.Quiet <= 0 || c.SettleTimeout <= 0 ||
		c.MeasureDelay < 0 || c.Samples < 1 || c.SampleInterval <= 0:
		return fmt.Errorf("rebalance: durations and Samples must be positive (--load-report-interval at least 1s)")
	}
	return nil
}

// HotResult is one hot-partition measurement.
type HotResult struct {
	Mode string
	// Load is each agent's measured bytes in plus out per second, averaged
	// over the samples; Ratio the largest over the smallest.
	Load  map[int32]float64
	Ratio float64
	// Planned is each agent's bytes in plus out per second that the final
	// placement implies at the configured rates (a leader carries a
	// partition's rate once per replica, a follower once), and
	// PlannedRatio its largest over its smallest: the placement's result
	// without measurement noise.
	Planned      map[int32]float64
	PlannedRatio float64
	// Replicas and Leaders per agent, once settled.
	Replicas, Leaders map[int32]int
	// Settled is the time from the new agent's start to the settled
	// placement (the start of its Quiet stretch).
	Settled time.Duration
	// Moved is whether the placement changed while the load was read.
	Moved bool
	// MovesStarted and LeadershipMoves are, summed over the agents,
	// strata_reassignments_started_total and
	// strata_balancer_leadership_moves_total.
	MovesStarted, LeadershipMoves float64
	// Acked and Failed count the producers' records.
	Acked, Failed int64
	LoadAverage   string // /proc/loadavg at the end, if readable
}

// MeasureHot runs one measurement and stops every agent it started.
func MeasureHot(ctx context.Context, cfg HotConfig) (res HotResult, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	res.Mode = cfg.Mode
	dir, err := os.MkdirTemp("", "strata-hot-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	cluster, err := loadgen.StartStrataCluster(ctx, loadgen.StrataClusterOptions{
		Agents: cfg.Agents, Binary: cfg.Binary, Dir: dir,
		Args: []string{
			"--rebalance-by", cfg.Mode,
			"--load-report-interval", cfg.LoadReportInterval.String(),
			"--tiering-interval", "200ms",
			"--retention-check-interval", "500ms",
			"--drain-timeout", "0s",
		},
	})
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := cluster.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("rebalance: stop cluster: %w", cerr)
		}
	}()
	const topic = "hot"
	base := DefaultConfig()
	base.Partitions, base.ReplicationFactor = cfg.Partitions, cfg.ReplicationFactor
	if err := createTopic(ctx, cluster.Seeds(), topic, base); err != nil {
		return res, err
	}
	rates := make([]float64, cfg.Partitions) // records a second
	for p := range rates {
		rates[p] = float64(cfg.ColdRate) / float64(cfg.RecordBytes)
	}
	rates[0] *= float64(cfg.HotFactor)
	prod, err := startHotLoad(cluster.Seeds(), topic, rates, cfg.RecordBytes)
	if err != nil {
		return res, err
	}
	defer func() { res.Acked, res.Failed = prod.stop() }()
	if err := sleep(ctx, cfg.Warmup); err != nil {
		return res, err
	}
	start := time.Now()
	if _, err := cluster.Join(ctx); err != nil {
		return res, err
	}
	p, settledAt, err := awaitSettled(ctx, cluster.Seeds()[0], topic, cfg.Agents+1, cfg)
	if err != nil {
		return res, err
	}
	res.Settled = settledAt.Sub(start)
	res.Replicas, res.Leaders = p.counts(), map[int32]int{}
	res.Planned = map[int32]float64{}
	for _, b := range p.brokers {
		res.Leaders[b], res.Planned[b] = 0, 0
	}
	for idx, pp := range p.partitions {
		rate := rates[idx] * float64(cfg.RecordBytes)
		res.Leaders[pp.leader]++
		for _, r := range pp.replicas {
			if r == pp.leader {
				res.Planned[r] += rate * float64(len(pp.replicas))
			} else {
				res.Planned[r] += rate
			}
		}
	}
	res.PlannedRatio = maxOverMin(res.Planned)

	if err := sleep(ctx, cfg.MeasureDelay); err != nil {
		return res, err
	}
	res.Load = map[int32]float64{}
	for i := range cfg.Samples {
		if i > 0 {
			if err := sleep(ctx, cfg.SampleInterval); err != nil {
				return res, err
			}
		}
		for _, a := range cluster.Agents() {
			id, in, out, err := agentRates(ctx, a.HTTPAddr())
			if err != nil {
				return res, err
			}
			res.Load[id] += (in + out) / float64(cfg.Samples)
		}
	}
	res.Ratio = maxOverMin(res.Load)
	if after, err := readPlacementOnce(ctx, cluster.Seeds()[0], topic); err == nil {
		res.Moved = signature(after) != signature(p)
	}
	for _, a := range cluster.Agents() {
		m, err := scrapeMetrics(ctx, a.HTTPAddr())
		if err != nil {
			return res, err
		}
		v, _ := m.Value("strata_reassignments_started_total")
		res.MovesStarted += v
		v, _ = m.Value("strata_balancer_leadership_moves_total")
		res.LeadershipMoves += v
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAverage = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return res, nil
}

func maxOverMin(m map[int32]float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi / lo
}

func scrapeMetrics(ctx context.Context, httpAddr string) (metricstext.Families, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return metricstext.Scrape(ctx, "http://"+httpAddr+"/metrics")
}

// agentRates is an agent's id (strata_agent_info), and its
// strata_agent_in_bytes_per_second and strata_agent_out_bytes_per_second.
func agentRates(ctx context.Context, httpAddr string) (id int32, in, out float64, err error) {
	m, err := scrapeMetrics(ctx, httpAddr)
	if err != nil {
		return 0, 0, 0, err
	}
	info := m.Samples("strata_agent_info")
	in, ok1 := m.Value("strata_agent_in_bytes_per_second")
	out, ok2 := m.Value("strata_agent_out_bytes_per_second")
	if len(info) != 1 || !ok1 || !ok2 {
		return 0, 0, 0, fmt.Errorf("rebalance: the agent at %s reports no load (strata_agent_info, strata_agent_*_bytes_per_second)", httpAddr)
	}
	n, err := strconv.ParseInt(info[0].Labels["agent_id"], 10, 32)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("rebalance: the agent at %s: agent id %q", httpAddr, info[0].Labels["agent_id"])
	}
	return int32(n), in, out, nil
}

func readPlacementOnce(ctx context.Context, seed, topic string) (placement, error) {
	cl, adm, err := loadgen.NewAdmin([]string{seed})
	if err != nil {
		return placement{}, err
	}
	defer cl.Close()
	return readPlacement(ctx, adm, topic)
}

// signature is the replicas and leader of every partition, in partition
// order.
func signature(p placement) string {
	idx := make([]int32, 0, len(p.partitions))
	for i := range p.partitions {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var b strings.Builder
	for _, i := range idx {
		pp := p.partitions[i]
		fmt.Fprintf(&b, "%d:%d%v;", i, pp.leader, pp.replicas)
	}
	return b.String()
}

// awaitSettled polls the placement until agents agents are live, every
// replica is in sync, no move is in flight and replicas and leaders have
// stayed the same for cfg.Quiet, and returns it with when that stretch
// began.
func awaitSettled(ctx context.Context, seed, topic string, agents int, cfg HotConfig) (placement, time.Time, error) {
	cl, adm, err := loadgen.NewAdmin([]string{seed})
	if err != nil {
		return placement{}, time.Time{}, err
	}
	defer cl.Close()
	deadline := time.Now().Add(cfg.SettleTimeout)
	var since time.Time
	var last string
	var why error
	for {
		now := time.Now()
		p, err := readPlacement(ctx, adm, topic)
		if err == nil {
			err = readMoving(ctx, adm, topic, &p)
		}
		switch {
		case err != nil:
		case len(p.brokers) != agents:
			err = fmt.Errorf("%d agents live", len(p.brokers))
		case p.moving > 0:
			err = fmt.Errorf("%d moves in flight", p.moving)
		case !p.inSync(cfg.ReplicationFactor):
			err = fmt.Errorf("a partition is not fully in sync")
		}
		if err != nil {
			since, last, why = time.Time{}, "", err
		} else if sig := signature(p); sig != last {
			since, last = now, sig
		} else if now.Sub(since) >= cfg.Quiet {
			return p, since, nil
		}
		if now.After(deadline) {
			return placement{}, time.Time{}, fmt.Errorf("rebalance: placement not settled within %v: %v", cfg.SettleTimeout, why)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return placement{}, time.Time{}, err
		}
	}
}

// hotLoad produces to every partition at its own rate.
type hotLoad struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu            sync.Mutex
	acked, failed int64
}

// startHotLoad produces rates[p] records a second of size bytes to each
// partition p of topic, acks=all, until stop.
func startHotLoad(seeds []string, topic string, rates []float64, size int) (*hotLoad, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &hotLoad{cl: cl, cancel: cancel, done: make(chan struct{})}
	value := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = byte(rng.Uint32()) // incompressible, as real payloads often are
	}
	go func() {
		defer close(l.done)
		const tick = 20 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		due := make([]float64, len(rates))
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for p, r := range rates {
				due[p] += r * tick.Seconds()
				for ; due[p] >= 1; due[p]-- {
					cl.Produce(ctx, &kgo.Record{Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) {
						l.mu.Lock()
						defer l.mu.Unlock()
						if err == nil {
							l.acked++
						} else if ctx.Err() == nil {
							l.failed++
						}
					})
				}
			}
		}
	}()
	return l, nil
}

// stop ends the load and returns the records acknowledged and failed.
func (l *hotLoad) stop() (acked, failed int64) {
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	l.cl.Flush(ctx)
	cancel()
	l.cl.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.failed
}

// HotTable is a Markdown table of the measurements, one row each.
func HotTable(rs []HotResult) string {
	var b strings.Builder
	b.WriteString("| placement | measured in+out per agent (MiB/s) | measured max/min | planned max/min | replicas per agent | leaders per agent | settled after (s) | moves started | leadership moves |\n")
	b.WriteString("|---|---|---:|---:|---|---|---:|---:|---:|\n")
	for _, r := range rs {
		ids := make([]int32, 0, len(r.Load))
		for id := range r.Load {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var load, reps, leads []string
		for _, id := range ids {
			load = append(load, fmt.Sprintf("%.2f", r.Load[id]/(1<<20)))
			reps = append(reps, fmt.Sprint(r.Replicas[id]))
			leads = append(leads, fmt.Sprint(r.Leaders[id]))
		}
		moved := ""
		if r.Moved {
			moved = " (moved while read)"
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f%s | %.2f | %s | %s | %.1f | %.0f | %.0f |\n", r.Mode, strings.Join(load, ", "), r.Ratio, moved,
			r.PlannedRatio, strings.Join(reps, ", "), strings.Join(leads, ", "), r.Settled.Seconds(), r.MovesStarted, r.LeadershipMoves)
	}
	return b.String()
}
