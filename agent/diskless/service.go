package diskless

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/cache"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// Coord is where a diskless partition's batch coordinator runs: the
// agent that leads its partition of __diskless_state, that agent's
// inter-agent address, and the partition's leader epoch (the epoch
// clients see for the diskless partition).
type Coord struct {
	Agent int32
	Addr  string
	Epoch int32
}

// Host is the agent as the diskless data path sees it. Every method is
// safe for concurrent use.
type Host interface {
	// Coordinator returns where (topicID, partition)'s batch coordinator
	// runs, creating __diskless_state on first use.
	Coordinator(ctx context.Context, topicID [16]byte, partition int32) (Coord, error)
	// CoordinatorEpoch is the leader epoch of the coordinator's partition
	// of __diskless_state in this agent's view, without its address.
	CoordinatorEpoch(ctx context.Context, topicID [16]byte, partition int32) (int32, error)
	// DataChanged wakes the Fetch long polls waiting on this agent: a
	// diskless partition's high watermark moved.
	DataChanged()
	// CoordinatorAgents are the agents that lead the partitions of
	// __diskless_state, with their addresses, and whether every
	// partition has a leader (false, too, without the topic).
	CoordinatorAgents(ctx context.Context) ([]Coord, bool, error)
}

// ServiceConfig is the data path's share of the agent's settings.
type ServiceConfig struct {
	Writer Config
	// StatePartitions (--diskless-state-partitions) is __diskless_state's
	// partition count when it is created (agent/coord reads it).
	StatePartitions int32
	// ChunkBytes is the cache's typical item (an object) and CacheBytes
	// (--diskless-cache-bytes) its size.
	ChunkBytes, CacheBytes int64
	// IndexPoll (--diskless-index-poll) is how long one long-polled index
	// request waits for a commit (the index follower).
	IndexPoll time.Duration
	// CompactionMaxLag (--diskless-compaction-max-lag) is the age of the
	// oldest uncompacted batch at which its partition is compacted even
	// short of segment.bytes; StagingDir is where segments are staged
	// (the agent's --data-dir/diskless-compaction).
	CompactionMaxLag time.Duration
	StagingDir       string
}

// Service is one agent's diskless data path: the write buffer, the
// commits it routes to coordinators, and the reads of index and objects.
// It starts one goroutine per coordinator agent it follows.
type Service struct {
	cfg    ServiceConfig
	self   int32
	host   Host
	peers  *peer.Pool
	bucket objstore.Bucket
	chunks *cache.Cache
	writer *Writer
	logger *slog.Logger
	// orphansDeleted is strata_diskless_objects_deleted_total{reason="orphan"}.
	orphansDeleted prometheus.Counter
	// tier uploads compacted segments and reads them back (compact.go,
	// remote.go); compactions counts strata_diskless_compaction_segments_total.
	tier        *tiering.Tierer
	compactions prometheus.Counter

	mu      sync.Mutex
	views   map[batchcoord.PartitionKey]*view
	follows map[int32]*follower // by coordinator agent
	// compacting are the partitions compacted here; remotes the tiered
	// part of the partitions read here.
	compacting map[batchcoord.PartitionKey]*compactPart
	remotes    map[batchcoord.PartitionKey]*remotePart
	closed     bool
	stop       chan struct{}
	wg         sync.WaitGroup
}

// view is what this agent last learnt of a diskless partition.
type view struct {
	batchcoord.View
	coord Coord
	at    time.Time // when learnt
	// readAt is when a reader last asked: the follower watches the
	// partitions read within followIdle.
	readAt time.Time
}

// followIdle is how long after its last read a partition stays followed.
const followIdle = time.Minute

// NewService returns the data path of agent self over bucket; commits
// and index requests go over peers (the agent's own agent included).
func NewService(cfg ServiceConfig, self int32, host Host, bucket objstore.Bucket, tier *tiering.Tierer, peers *peer.Pool, reg prometheus.Registerer, logger *slog.Logger) (*Service, error) {
	cfg.Writer.Agent = self
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	chunks, err := cache.New(cfg.CacheBytes, cache.Options{ItemBytes: cfg.ChunkBytes})
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, self: self, host: host, peers: peers, bucket: bucket, chunks: chunks, logger: logger, tier: tier,
		views: map[batchcoord.PartitionKey]*view{}, follows: map[int32]*follower{}, stop: make(chan struct{}),
		compacting: map[batchcoord.PartitionKey]*compactPart{}, remotes: map[batchcoord.PartitionKey]*remotePart{}}
	if err := s.resetStaging(); err != nil {
		chunks.Close()
		return nil, fmt.Errorf("diskless: staging directory: %w", err)
	}
	if s.writer, err = NewWriter(cfg.Writer, bucket, s, reg, logger); err != nil {
		chunks.Close()
		return nil, err
	}
	s.writer.OnUploaded = s.prime
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_objects_deleted_total",
		Help: "Diskless commit objects this agent deleted, by reason: orphan (never committed, older than --orphan-grace)."}, []string{"reason"})
	if err := reg.Register(deleted); err != nil {
		s.writer.Close()
		chunks.Close()
		return nil, err
	}
	s.orphansDeleted = deleted.WithLabelValues("orphan")
	s.compactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_diskless_compaction_segments_total",
		Help: "Segments object compaction moved from commit objects into diskless partitions' tiered segments on this agent."})
	if err := reg.Register(s.compactions); err != nil {
		s.writer.Close()
		chunks.Close()
		return nil, err
	}
	return s, nil
}

// Writer is the write buffer every diskless Produce goes through.
func (s *Service) Writer() *Writer { return s.writer }

// Drain cuts the write buffer and waits for its commits (scale-in).
func (s *Service) Drain(ctx context.Context) error { return s.writer.Drain(ctx) }

// Close stops the followers and the writer; waiting producers get
// ErrClosed.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	err := s.writer.Close()
	s.wg.Wait()
	s.chunks.Close()
	return err
}

// learn records what a coordinator said of k, and wakes the long polls
// when its high watermark moved.
func (s *Service) learn(k batchcoord.PartitionKey, co Coord, v batchcoord.View) {
	s.mu.Lock()
	old, ok := s.views[k]
	if !ok {
		old = &view{}
		s.views[k] = old
	}
	// Offsets only grow (nothing committed is ever undone), so an answer
	// overtaken by a newer one moves nothing back.
	moved := v.HighWatermark > old.HighWatermark || v.LastStable > old.LastStable || v.LogStart > old.LogStart
	old.HighWatermark = max(old.HighWatermark, v.HighWatermark)
	old.LastStable = max(old.LastStable, v.LastStable)
	old.LogStart = max(old.LogStart, v.LogStart)
	old.CompactedEnd = max(old.CompactedEnd, v.CompactedEnd)
	old.Epoch = max(old.Epoch, v.Epoch)
	old.coord, old.at = co, time.Now()
	s.mu.Unlock()
	if moved {
		s.host.DataChanged()
	}
}

// epochSeen is the highest coordinator epoch this agent learnt for k.
func (s *Service) epochSeen(k batchcoord.PartitionKey) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.views[k]; ok {
		return v.Epoch
	}
	return 0
}

// cached returns the last view of k, and whether it is fresh enough to
// answer from: learnt within maxAge.
func (s *Service) cached(k batchcoord.PartitionKey, maxAge time.Duration) (view, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[k]
	if !ok {
		return view{}, false
	}
	return *v, time.Since(v.at) <= maxAge
}
