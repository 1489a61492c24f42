package tiering

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/cache"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// Config holds the agent-wide tiering settings.
type Config struct {
	// Interval is how often the uploader looks for sealed segments.
	Interval time.Duration
	// Concurrency bounds the partitions uploading at once.
	Concurrency int
	// UploadRate bounds upload bandwidth in bytes per second; 0: no limit.
	UploadRate int64
	// PageSize is the number of entries of a manifest page.
	PageSize int
	// ChunkBytes is the unit of remote reads and of the cache.
	ChunkBytes int64
	// CacheBytes bounds the remote-read cache.
	CacheBytes int64
	// OrphanGrace: objects no manifest names are deleted once older.
	OrphanGrace time.Duration
	// CompactionGrace: objects a compaction swap took out of the manifest
	// are deleted once retired this long (readers holding an older head
	// may still read them), like Kafka's file.delete.delay.ms.
	CompactionGrace time.Duration
	// RetryMax caps the backoff after failed uploads.
	RetryMax time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Interval: time.Second, Concurrency: 4, PageSize: DefaultPageSize, ChunkBytes: 4 << 20,
		CacheBytes: 256 << 20, OrphanGrace: time.Hour, CompactionGrace: time.Minute, RetryMax: 30 * time.Second}
}

// Source is what tiering needs of a local partition replica.
type Source interface {
	Topic() string
	TopicID() [16]byte
	Index() int32
	Log() Log
	LeaderEpoch() int32
	HighWatermark() int64
	// Leading reports whether this replica leads the partition: only the
	// leader uploads and applies remote retention.
	Leading() bool
}

// Tierer uploads and reads back the tiered partitions of one agent.
type Tierer struct {
	bucket  objstore.Bucket
	cfg     Config
	logger  *slog.Logger
	metrics *Metrics
	chunks  *cache.Cache

	mu    sync.Mutex
	parts map[*Partition]struct{}

	paceMu   sync.Mutex
	paceNext time.Time
}

// New returns a Tierer over bucket.
func New(bucket objstore.Bucket, cfg Config, metrics *Metrics, logger *slog.Logger) (*Tierer, error) {
	if cfg.ChunkBytes <= 0 || cfg.CacheBytes < cfg.ChunkBytes || cfg.Interval <= 0 || cfg.Concurrency < 1 {
		return nil, fmt.Errorf("tiering: invalid config %+v", cfg)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	c, err := newChunkCache(cfg.CacheBytes, cfg.ChunkBytes, metrics)
	if err != nil {
		return nil, err
	}
	return &Tierer{bucket: bucket, cfg: cfg, logger: logger, metrics: metrics, chunks: c, parts: map[*Partition]struct{}{}}, nil
}

// Partition is one tiered partition: its manifest and the head last read
// or written.
type Partition struct {
	t        *Tierer
	src      Source
	prefix   string
	bucket   objstore.Bucket // the Tierer's, counting under the topic (cost.go)
	manifest *Manifest

	// uploading is held by an upload round of this partition: the
	// periodic one and a drain's (which runs beside it) would otherwise
	// upload one segment twice, and the second one's manifest append
	// fails as not contiguous. Before mu.
	uploading sync.Mutex

	mu           sync.Mutex
	h            Head
	pendingSince time.Time
	failures     int
	retryAt      time.Time
	lastErr      error
	cleaned      time.Time // last orphan cleanup
	// compacting names the objects the compaction pass in progress has
	// written or is writing: none is in the manifest until the pass swaps
	// them in, and a pass may outlast the orphan grace.
	compacting map[string]bool
	// headEpoch is the leader epoch in which h was last read or written:
	// a replica that starts leading re-reads the manifest, which the
	// previous leader changed meanwhile.
	headEpoch int32
	// reread serializes Refresh, and holds when its last read started:
	// one that succeeded, one that failed and its error.
	reread                 sync.Mutex
	rereadOK, rereadFailed time.Time
	rereadErr              error
}

func (p *Partition) name() string { return fmt.Sprintf("%s-%d", p.src.Topic(), p.src.Index()) }

// Open starts tiering src, whose objects live under prefix. It reads the
// manifest and, when the local log is empty but the bucket holds the
// partition (a new disk), makes the log continue where the bucket ends:
// the records below are read from the bucket.
func (t *Tierer) Open(ctx context.Context, src Source, prefix string) (*Partition, error) {
	bucket := t.metrics.costs.bucket(t.bucket, src.Topic())
	p := &Partition{t: t, src: src, prefix: prefix, bucket: bucket, manifest: NewManifest(bucket, prefix, t.cfg.PageSize)}
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		return nil, err
	}
	l := src.Log()
	// Restore also when every segment has expired from the manifest: the
	// log must not reissue offsets below its start. An empty log of a
	// follower restores too, so that a new replica copies from its leader
	// only what the bucket does not hold. A follower whose log is behind
	// but not empty gets what it lacks from its leader instead.
	p.headEpoch = src.LeaderEpoch()
	empty := l.LogStartOffset() == l.LogEndOffset()
	if next := h.Next(); l.LogEndOffset() < next && (empty || src.Leading()) {
		if !empty {
			return nil, fmt.Errorf("tiering: %s: the local log ends at %d, below the bucket's %d, but is not empty; refusing to guess", p.name(), l.LogEndOffset(), next)
		}
		snap, err := p.lastSnapshot(ctx, &h)
		if err != nil {
			return nil, err
		}
		if err := l.RestartAt(next, snap); err != nil {
			return nil, err
		}
		t.logger.Info("partition restored from the bucket", "partition", p.name(), "start", h.StartOffset, "next", next)
	}
	l.SetRemoteEnd(h.Next())
	p.h = h
	t.mu.Lock()
	t.parts[p] = struct{}{}
	t.mu.Unlock()
	return p, nil
}

// remove stops tiering p (the partition closed or moved).
// lastSnapshot returns the producer snapshot uploaded with the manifest's
// last segment, which was taken at its end; nil if there is none.
func (p *Partition) lastSnapshot(ctx context.Context, h *Head) ([]byte, error) {
	var last Entry
	switch {
	case len(h.Tail) > 0:
		last = h.Tail[len(h.Tail)-1]
	case len(h.Pages) > 0:
		entries, err := p.manifest.Page(ctx, h.Pages[len(h.Pages)-1])
		if err != nil {
			return nil, err
		}
		last = entries[len(entries)-1]
	}
	if !last.Snapshot || last.Next != h.Next() {
		return nil, nil
	}
	b, _, err := p.bucket.Get(ctx, p.prefix+last.Object+suffixSnapshot)
	if err != nil {
		return nil, fmt.Errorf("tiering: %s: read producer snapshot of %s: %w", p.name(), last.Object, err)
	}
	return b, nil
}

func (t *Tierer) remove(p *Partition) {
	t.mu.Lock()
	delete(t.parts, p)
	t.mu.Unlock()
}

func (t *Tierer) partitions() []*Partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Partition, 0, len(t.parts))
	for p := range t.parts {
		out = append(out, p)
	}
	return out
}

func (p *Partition) head() Head {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.h
}

// setHead records h unless a newer head (a higher revision, written by a
// concurrent update) is already known.
func (p *Partition) setHead(h Head) {
	p.mu.Lock()
	if h.Revision >= p.h.Revision {
		p.h = h
	}
	next := p.h.Next()
	p.mu.Unlock()
	p.src.Log().SetRemoteEnd(next)
}

// currentHead is the head as this leader last wrote it; a leader is the
// only writer, so it re-reads only after a failure.
func (p *Partition) currentHead(ctx context.Context) (Head, error) {
	epoch := p.src.LeaderEpoch()
	p.mu.Lock()
	stale := p.lastErr != nil || p.headEpoch != epoch
	h := p.h
	p.mu.Unlock()
	if !stale {
		return h, nil
	}
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		return Head{}, err
	}
	p.setHead(h)
	p.mu.Lock()
	p.headEpoch = epoch
	p.mu.Unlock()
	return p.head(), nil
}

// Refresh makes sure the partition's head was read from the manifest
// after since, re-reading it unless a read that started after since has
// succeeded; concurrent callers share one read, and a read that failed
// after since answers its error without another (a failure is logged
// once, where it happens). Callers: a follower every few upload rounds,
// so that its local retention may delete what the leader uploaded; a
// replica whose log restarted at its leader's local start (since: now),
// which may be past the bucket's end it last read; and a read below the
// local log and past that end (since: a second ago, so such reads cost
// at most one manifest GET a second per partition).
func (p *Partition) Refresh(ctx context.Context, since time.Time) error {
	p.reread.Lock()
	defer p.reread.Unlock()
	switch {
	case !p.rereadOK.Before(since):
		return nil
	case !p.rereadFailed.Before(since):
		return p.rereadErr
	}
	began := time.Now()
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		p.rereadFailed, p.rereadErr = began, err
		p.t.logger.Warn("re-read manifest", "partition", p.name(), "err", err)
		return err
	}
	p.setHead(h)
	p.rereadOK = began
	return nil
}

// truncate raises the partition's remote start, deletes what drops out
// and returns how many segments did.
func (p *Partition) truncate(ctx context.Context, start int64) (int, error) {
	h, dropped, pages, err := p.manifest.Truncate(ctx, p.src.LeaderEpoch(), start)
	if err != nil {
		return 0, err
	}
	p.setHead(h)
	p.t.deleteObjects(ctx, p, dropped, pages)
	return len(dropped), nil
}

// deleteConcurrency bounds the DELETE requests of one partition in flight.
const deleteConcurrency = 8

// deleteObjects removes the objects of dropped entries and pages; failures
// are left to the orphan janitor.
func (t *Tierer) deleteObjects(ctx context.Context, p *Partition, dropped []Entry, pages []string) {
	var keys []string
	for _, e := range dropped {
		for _, s := range e.suffixes() {
			keys = append(keys, p.prefix+e.Object+s)
		}
	}
	for _, k := range pages {
		keys = append(keys, p.prefix+k)
	}
	for _, f := range p.deleteKeys(ctx, keys) {
		t.logger.Warn("object left for the orphan janitor", "key", f.key, "err", f.err)
	}
	t.metrics.deleted(len(dropped))
}

// failedDelete is a key deleteKeys could not delete.
type failedDelete struct {
	key string
	err error
}

// deleteKeys deletes keys, deleteConcurrency at a time, and returns those
// that failed; a key already gone counts as deleted.
func (p *Partition) deleteKeys(ctx context.Context, keys []string) []failedDelete {
	var mu sync.Mutex
	var failed []failedDelete
	var g errgroup.Group
	g.SetLimit(deleteConcurrency)
	for _, k := range keys {
		g.Go(func() error {
			if err := p.bucket.Delete(ctx, k); err != nil && !objstore.IsNotFound(err) {
				mu.Lock()
				failed = append(failed, failedDelete{k, err})
				mu.Unlock()
			}
			return nil
		})
	}
	g.Wait()
	return failed
}

// Run uploads until ctx ends: every Interval, each leading partition with
// sealed segments uploads them, at most Concurrency at once; a partition
// whose upload failed waits with exponential backoff.
func (t *Tierer) Run(ctx context.Context) {
	ticker := time.NewTicker(t.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		t.UploadOnce(ctx)
	}
}

// followerRefreshEvery is how many upload rounds apart a follower re-reads
// its partition's manifest.
const followerRefreshEvery = 10

// UploadOnce runs one round of uploads and waits for it.
func (t *Tierer) UploadOnce(ctx context.Context) {
	g := errgroup.Group{}
	g.SetLimit(t.cfg.Concurrency)
	now := time.Now()
	for _, p := range t.partitions() {
		p.mu.Lock()
		wait := now.Before(p.retryAt)
		p.mu.Unlock()
		if !p.src.Leading() {
			p.Refresh(ctx, now.Add(-followerRefreshEvery*t.cfg.Interval)) // a failure is logged there
			continue
		}
		if wait {
			continue
		}
		g.Go(func() error {
			_, err := t.uploadPending(ctx, p)
			failures := p.recordResult(err, t.cfg.RetryMax)
			if err != nil && ctx.Err() == nil {
				t.metrics.uploadFailed(p.src.Topic())
				t.logger.Warn("upload failed; will retry", "partition", p.name(), "err", err, "failures", failures)
			}
			return nil
		})
	}
	g.Wait()
}

// recordResult updates the backoff state after an upload round and returns
// the failures in a row so far (read here because a drain's upload may
// record its own result at the same time).
func (p *Partition) recordResult(err error, retryMax time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastErr = err
	if err == nil {
		p.failures, p.retryAt = 0, time.Time{}
		return 0
	}
	p.failures++
	backoff := min(time.Duration(1<<min(p.failures, 16))*100*time.Millisecond, retryMax)
	p.retryAt = time.Now().Add(backoff)
	return p.failures
}

// Status is one partition's tiering state, for the status page and
// `strata tiering status`.
type Status struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LocalBytes     int64   `json:"local_bytes"`
	LocalStart     int64   `json:"local_start_offset"`
	RemoteBytes    int64   `json:"remote_bytes"`
	RemoteSegments int     `json:"remote_segments"`
	RemoteStart    int64   `json:"remote_start_offset"`
	RemoteNext     int64   `json:"remote_next_offset"` // last uploaded offset + 1
	LagBytes       int64   `json:"upload_lag_bytes"`
	LagSegments    int     `json:"upload_lag_segments"`
	LagSeconds     float64 `json:"upload_lag_seconds"`
	LastError      string  `json:"last_error,omitempty"`
}

// Statuses reports every tiered partition.
func (t *Tierer) Statuses() []Status {
	now := time.Now()
	var out []Status
	for _, p := range t.partitions() {
		h := p.head()
		l := p.src.Log()
		bytes, segs, age := p.uploadLag(now)
		s := Status{Topic: p.src.Topic(), Partition: p.src.Index(), LocalBytes: l.Size(), LocalStart: l.LogStartOffset(),
			RemoteBytes: h.Bytes(), RemoteSegments: h.Segments(), RemoteStart: h.StartOffset, RemoteNext: h.Next(),
			LagBytes: bytes, LagSegments: segs, LagSeconds: age.Seconds()}
		p.mu.Lock()
		if p.lastErr != nil {
			s.LastError = p.lastErr.Error()
		}
		p.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// Close frees the chunk cache; loads still running finish without it.
func (t *Tierer) Close() { t.chunks.Close() }

// Close stops tiering the partition (it closed or moved away).
func (p *Partition) Close() { p.t.remove(p) }
