package partition

// The agent's replica fetchers (docs/design.md §6): one loop per leader
// agent that fetches, in one Fetch, every local partition following that
// leader whose action is ActionFetch, in a fetch session (KIP-227) so that
// quiet partitions cost nothing on later requests. Kafka's
// ReplicaFetcherThread does the same (with num.replica.fetchers = 1).
//
// Hand-off. A partition's own goroutine (fetcher.go) carries out every
// other action. When its action is a fetch from leader L it joins L's
// loop and waits; the loop hands it back (closes released) when its
// action is no longer a fetch from L (the loop's own result moved it on,
// or a state change did), and the goroutine also leaves by itself when a
// state change moves it to another action or the partition closes. So a
// partition is always either in one loop's set or running its own
// action: joining, leaving and handing back happen under the loop's
// mutex, and whoever removes a member from the set is the one that lets
// its goroutine run again.
//
//	partition goroutine            loop of leader L
//	───────────────────            ────────────────
//	action = fetch from L ─join──▶ members += p
//	wait: released,                round: read each member's action
//	      changed, stopped           not a fetch from L ──▶ hand back
//	                                 in backoff ──▶ left out this round
//	                               one Fetch (session: changes only)
//	                               apply each answer under p.mu,
//	                                 only while the action is current
//	                               next round at once
//
// The loop applies results as the partition goroutine did: under the
// partition's write lock and only while the action it fetched for is
// still current (withAction), so a loop racing a leadership change never
// extends a log for a superseded epoch. Appends with records run side by
// side (at most replicaApplyParallelism), so their fsyncs share the
// agent's group commit; the next request goes out once all are durable,
// and its offsets tell the leader what this replica holds.
//
// Errors. A partition's error backs that partition off alone (it is left
// out of the requests, and so forgotten by the session, until its retry
// time), as the per-partition fetcher did; OFFSET_OUT_OF_RANGE asks the
// leader for its log end and local log start over the loop's connection
// and hands the answer to the machine (FetchOutOfRange). A failed request
// backs the whole loop off and starts the session over.
//
// Life cycle. A loop starts with its first member and ends when a round
// finds it empty; Close stops every loop (its request is cancelled, its
// members handed back) and waits for them. The agent closes its
// partitions first.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/replica"
)

const (
	// replicaFetchResponseMaxBytes bounds one answer of a leader to a
	// loop (Kafka's replica.fetch.response.max.bytes); the first batch
	// comes whole.
	replicaFetchResponseMaxBytes = 16 << 20
	// replicaApplyParallelism bounds the partitions of one answer whose
	// records are appended (and fsynced) at once.
	replicaApplyParallelism = 32
)

// Leaders is what the fetch loops ask of the cluster; the controller
// implements it (Cluster includes it).
type Leaders interface {
	// AgentAddr is the Kafka address of another agent.
	AgentAddr(ctx context.Context, id int32) (string, error)
	// ReplicaLagTimeMax is replica.lag.time.max.ms: the long poll is a
	// quarter of it at most (replicaFetchWait).
	ReplicaLagTimeMax() time.Duration
	// LeaderRefused: a dial of the leader's agent was refused, so its
	// process is most likely gone; LeaderReached: a request to it was
	// answered after that.
	LeaderRefused(id int32)
	LeaderReached(id int32)
}

// Fetchers are an agent's fetch loops, one per leader agent. Safe for
// concurrent use.
type Fetchers struct {
	self    int32
	leaders Leaders
	peer    peer.Options
	logger  *slog.Logger
	stop    chan struct{} // closed by Close

	mu     sync.Mutex // before a loop's mu
	loops  map[int32]*leaderFetcher
	closed bool
	wg     sync.WaitGroup // the loops
}

// NewFetchers are the fetch loops of agent self, dialling leaders with
// opts (the inter-agent listener's TLS and SASL).
func NewFetchers(self int32, leaders Leaders, opts peer.Options, logger *slog.Logger) *Fetchers {
	return &Fetchers{self: self, leaders: leaders, peer: opts, logger: logger, stop: make(chan struct{}),
		loops: map[int32]*leaderFetcher{}}
}

// Close stops every loop, handing its partitions back, and waits for
// them; the partitions' goroutines then wait for their next state. It
// may be called twice.
func (fs *Fetchers) Close() {
	fs.mu.Lock()
	if !fs.closed {
		fs.closed = true
		close(fs.stop)
	}
	fs.mu.Unlock()
	fs.wg.Wait()
}

// Loops is the number of fetch loops running (one per leader followed).
func (fs *Fetchers) Loops() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.loops)
}

// replicaFetchWait is the long poll of a loop's fetch: at most a quarter
// of replica.lag.time.max.ms. A leader removes from the ISR a follower it
// has not heard from for that long even when nothing is written
// (agent/replica's CheckISR), so an idle follower must fetch several
// times per lag period. (Kafka requires replica.fetch.wait.max.ms <=
// replica.lag.time.max.ms for the same reason.)
func (fs *Fetchers) replicaFetchWait() time.Duration {
	return min(replicaFetchMaxWait, fs.leaders.ReplicaLagTimeMax()/4)
}

// fetchMember is a partition in a loop's set.
type fetchMember struct {
	p        *Partition
	loop     *leaderFetcher
	released chan struct{} // closed when the loop hands p back

	// The loop goroutine's alone.
	retryAt time.Time
	backoff time.Duration
	lastErr string
}

// join puts p in leader's loop, starting the loop if needed; nil after
// Close.
func (fs *Fetchers) join(p *Partition, leader int32) *fetchMember {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return nil
	}
	l := fs.loops[leader]
	if l == nil {
		l = &leaderFetcher{fs: fs, leader: leader, wake: make(chan struct{}, 1), members: map[*Partition]*fetchMember{},
			session: peer.NewFetchSession()}
		fs.loops[leader] = l
		fs.wg.Add(1)
		go func() {
			defer fs.wg.Done()
			l.run()
		}()
	}
	m := &fetchMember{p: p, loop: l, released: make(chan struct{})}
	l.mu.Lock()
	l.members[p] = m
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return m
}

// leave takes m out of its loop's set unless the loop handed it back.
func (m *fetchMember) leave() {
	l := m.loop
	l.mu.Lock()
	if l.members[m.p] == m {
		delete(l.members, m.p)
	}
	l.mu.Unlock()
}

// leaderFetcher is the loop of one leader.
type leaderFetcher struct {
	fs     *Fetchers
	leader int32
	wake   chan struct{} // a partition joined

	mu      sync.Mutex
	members map[*Partition]*fetchMember

	// The loop goroutine's alone.
	conn    peerConn
	session *peer.FetchSession
	backoff time.Duration
	lastErr string
	// refused: the last failed request's dial was refused.
	refused bool
}

// fetchItem is one partition of a request, with the action it fetches
// for.
type fetchItem struct {
	m   *fetchMember
	act replica.FollowerAction
}

func (l *leaderFetcher) run() {
	defer l.closeClient()
	defer l.releaseAll()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.fs.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		items, retryAt, empty := l.gather(time.Now())
		if empty {
			return
		}
		if len(items) == 0 {
			if !retryAt.IsZero() { // else every member was handed back: the next round ends the loop
				l.sleep(ctx, retryAt)
			}
			continue
		}
		if err := l.fetch(ctx, items); err != nil && ctx.Err() == nil {
			l.failed(ctx, err, len(items))
			continue
		}
		l.backoff = 0
		if l.refused {
			l.refused = false
			l.fs.leaders.LeaderReached(l.leader)
		}
	}
}

// gather is the partitions of the next request: every member whose
// action is still a fetch from this leader and that is not backing off.
// Members whose action moved on are handed back. It also returns the
// earliest retry time of those backing off, and whether the set is
// empty, in which case the loop has left Fetchers (a partition that joins
// now starts another).
func (l *leaderFetcher) gather(now time.Time) (items []fetchItem, retryAt time.Time, empty bool) {
	l.fs.mu.Lock()
	l.mu.Lock()
	if len(l.members) == 0 {
		delete(l.fs.loops, l.leader)
		l.mu.Unlock()
		l.fs.mu.Unlock()
		return nil, time.Time{}, true
	}
	members := make([]*fetchMember, 0, len(l.members))
	for _, m := range l.members { // map order: no partition always comes first
		members = append(members, m)
	}
	l.mu.Unlock()
	l.fs.mu.Unlock()
	for _, m := range members {
		act, _, _ := m.p.followerAction()
		if act.Kind != replica.ActionFetch || act.Leader != l.leader {
			l.release(m)
			continue
		}
		if now.Before(m.retryAt) {
			if retryAt.IsZero() || m.retryAt.Before(retryAt) {
				retryAt = m.retryAt
			}
			continue
		}
		items = append(items, fetchItem{m, act})
	}
	return items, retryAt, false
}

// release hands m back to its partition's goroutine, unless it left.
func (l *leaderFetcher) release(m *fetchMember) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.members[m.p] == m {
		delete(l.members, m.p)
		close(m.released)
	}
}

// releaseAll hands every member back: the loop is ending.
func (l *leaderFetcher) releaseAll() {
	l.fs.mu.Lock()
	if l.fs.loops[l.leader] == l {
		delete(l.fs.loops, l.leader)
	}
	l.fs.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, m := range l.members {
		delete(l.members, p)
		close(m.released)
	}
}

// current reports whether m is still in the set.
func (l *leaderFetcher) current(m *fetchMember) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.members[m.p] == m
}

// sleep waits until retryAt, a partition joins, or the loop stops.
func (l *leaderFetcher) sleep(ctx context.Context, retryAt time.Time) {
	t := time.NewTimer(time.Until(retryAt))
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.wake:
	case <-ctx.Done():
	}
}

func (l *leaderFetcher) closeClient() { l.conn.close() }

// connect returns the connection to the leader, dialling when needed.
func (l *leaderFetcher) connect(ctx context.Context) (*peer.Client, error) {
	addr, err := l.fs.leaders.AgentAddr(ctx, l.leader)
	if err != nil {
		return nil, err
	}
	return l.conn.get(ctx, l.leader, addr, l.fs.self, l.fs.peer)
}

// fetch sends one Fetch for items and applies its answer. An error is the
// request's; each partition's own errors back it off alone.
func (l *leaderFetcher) fetch(ctx context.Context, items []fetchItem) error {
	wait := l.fs.replicaFetchWait()
	// A request that takes far longer than a long poll should is given
	// up: the leader may be paused or cut off.
	ctx, cancel := context.WithTimeout(ctx, wait+replicaRequestSlack)
	defer cancel()
	client, err := l.connect(ctx)
	if err != nil {
		return err
	}
	want := make([]peer.FetchPartition, len(items))
	byPartition := make(map[peer.TopicPartition]int, len(items))
	for i, it := range items {
		tp := peer.TopicPartition{Topic: it.m.p.topic, Partition: it.m.p.index}
		want[i] = peer.FetchPartition{TopicPartition: tp, LeaderEpoch: it.act.LeaderEpoch, Offset: it.act.Offset, MaxBytes: replicaFetchMaxBytes}
		byPartition[tp] = i
	}
	req := peer.FetchRequest{ReplicaID: l.fs.self, MaxWait: wait, MaxBytes: replicaFetchResponseMaxBytes}
	l.session.Next(&req, want)
	resp, err := client.Fetch(ctx, req)
	if err != nil {
		l.session.Failed(err)
		return err
	}
	l.session.Answered(resp)

	var appends []appendJob
	for _, fp := range resp.Partitions {
		i, ok := byPartition[fp.TopicPartition]
		if !ok || !l.current(items[i].m) {
			continue // not asked, or handed back meanwhile: its goroutine owns it
		}
		it := items[i]
		switch {
		case errors.Is(fp.Err, log.ErrOffsetOutOfRange):
			l.done(it, l.outOfRange(ctx, it))
		case fp.Err != nil:
			l.done(it, fp.Err)
		case len(fp.Records) > 0:
			appends = append(appends, appendJob{item: it, fp: fp})
		case fp.HighWatermark < 0:
			// Not read (a leader that skips partitions past the byte
			// limit): nothing learnt, and the HW must not move back.
		default:
			l.done(it, it.m.p.applyFetched(it.act, fp))
		}
	}
	l.appendAll(appends)
	return nil
}

type appendJob struct {
	item fetchItem
	fp   peer.FetchedPartition
	err  error
}

// appendAll applies the answers with records, replicaApplyParallelism at
// a time, so that their fsyncs overlap; it returns when all are done.
func (l *leaderFetcher) appendAll(jobs []appendJob) {
	if len(jobs) == 1 {
		jobs[0].err = jobs[0].item.m.p.applyFetched(jobs[0].item.act, jobs[0].fp)
	} else if len(jobs) > 1 {
		var wg sync.WaitGroup
		sem := make(chan struct{}, replicaApplyParallelism)
		for i := range jobs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				jobs[i].err = jobs[i].item.m.p.applyFetched(jobs[i].item.act, jobs[i].fp)
			})
		}
		wg.Wait()
	}
	for _, j := range jobs {
		l.done(j.item, j.err)
	}
}

// outOfRange handles OFFSET_OUT_OF_RANGE for one partition: the leader's
// log end and local log start decide between truncating, restarting at
// the local start and fetching again (the machine's FetchOutOfRange).
func (l *leaderFetcher) outOfRange(ctx context.Context, it fetchItem) error {
	p, act := it.m.p, it.act
	client, err := l.connect(ctx) // dropped by an earlier partition's failure
	if err != nil {
		return err
	}
	leaderEnd, err := client.LogEnd(ctx, p.topic, p.index, p.agentID, act.LeaderEpoch)
	if err != nil {
		l.checkConnection(err)
		return err
	}
	localStart, err := client.LocalLogStart(ctx, p.topic, p.index, p.agentID, act.LeaderEpoch)
	if err != nil {
		l.checkConnection(err)
		return err
	}
	err = p.withAction(act, func() (replica.FollowerAction, error) {
		return p.rep.FetchOutOfRange(act, localStart, leaderEnd, p.log)
	})
	if err == nil {
		// A truncation or restart is the partition goroutine's to do.
		if next, _, _ := p.followerAction(); next.Kind != replica.ActionFetch {
			l.release(it.m)
		}
	}
	return err
}

// checkConnection drops the connection after an error that was not an
// answer (an error code is one): it may be half read.
func (l *leaderFetcher) checkConnection(err error) {
	var code *kerr.Error
	if !errors.As(err, &code) {
		l.closeClient()
		l.session.Failed(err)
	}
}

// done records a partition's outcome: success ends its backoff; a
// superseded action or a closed partition is not a failure (its
// goroutine has moved on); any other error backs the partition off, as
// the per-partition fetcher did: the state is re-read when the leader
// says this agent is behind (or does not answer as leader), and the next
// attempt waits a little longer each time.
func (l *leaderFetcher) done(it fetchItem, err error) {
	m := it.m
	switch {
	case err == nil:
		m.backoff = 0
		return
	case errors.Is(err, replica.ErrStaleAction) || errors.Is(err, log.ErrClosed):
		return
	}
	p := m.p
	if errors.Is(err, dataplane.ErrNotLeader) || errors.Is(err, replica.ErrFencedLeaderEpoch) || errors.Is(err, dataplane.ErrUnknownTopicOrPartition) {
		p.cluster.RefreshState(p)
	}
	if msg := err.Error(); msg != m.lastErr {
		m.lastErr = msg
		p.logger.Warn("follower fetch failed", "topic", p.topic, "partition", p.index, "action", it.act.String(), "err", err)
	}
	m.backoff = min(max(2*m.backoff, 50*time.Millisecond), fetcherBackoffMax)
	m.retryAt = time.Now().Add(m.backoff)
}

// failed handles a failed request: the connection is dropped (the
// session starts over with the next request), and the loop waits a
// little longer each time before the next one. Partitions whose state
// changes meanwhile leave by themselves.
func (l *leaderFetcher) failed(ctx context.Context, err error, partitions int) {
	if errors.Is(err, peer.ErrFetchSessionLost) {
		// Evicted, or the leader restarted: the next request is a full
		// fetch, which opens another session, over the same connection.
		l.fs.logger.Info("replica fetch session lost; opening another", "leader", l.leader, "partitions", partitions, "err", err)
		return
	}
	l.closeClient()
	if errors.Is(err, syscall.ECONNREFUSED) {
		l.refused = true
		l.fs.leaders.LeaderRefused(l.leader)
	}
	if msg := err.Error(); msg != l.lastErr {
		l.lastErr = msg
		l.fs.logger.Warn("follower fetch failed", "leader", l.leader, "partitions", partitions, "err", err)
	}
	l.backoff = min(max(2*l.backoff, 50*time.Millisecond), fetcherBackoffMax)
	t := time.NewTimer(l.backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
