package kafka

// Fetch sessions (KIP-227), as Apache Kafka 4.x keeps them.
//
// A session remembers, per partition, what the fetcher last asked (offset,
// byte limit, epochs) and what the agent last told it (HW, log start), so
// that the fetcher sends only partitions whose request changed and the
// agent answers only partitions with something new. A request's
// (SessionID, SessionEpoch) picks one of four ways to serve it
// (newFetchContext):
//
//	epoch -1 (FINAL)           sessionless full fetch; a named session is closed
//	epoch 0  (INITIAL)         full fetch that opens a session when answered;
//	                           a named session is closed first
//	epoch n>0, id known, n ok  incremental: the request updates the session,
//	                           the answer carries only changed partitions
//	otherwise                  FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
//	                           or FETCH_SESSION_TOPIC_ID_ERROR, no partitions
//
// An incremental answer carries a partition when it returns records, its
// HW or log start changed since last answered, or it has an error (after
// which it is answered again once the error clears). A partition that
// returned records moves to the end of the session's order, so the byte
// limits do not always favour the same partitions.
//
// The cache holds at most Config.FetchSessionCacheSlots sessions (Kafka's
// max.incremental.fetch.session.cache.slots; 0 turns sessions off: every
// full fetch is answered with session id 0). When it is full, a new
// session takes the place of one unused for longer than
// Config.FetchSessionEvictionAge (min.incremental.fetch.session.eviction.ms);
// failing that, of the least valuable session older than that age, where
// a session with fewer partitions is worth less, and a follower's
// (privileged) more than a consumer's; a newcomer must be worth strictly
// more. Otherwise it is not created and the fetcher goes on without one.
// Kafka splits its cache into shards (KAFKA-9401: a new session lands in
// a random one of 8, each with an eighth of the slots); this one is a
// single pool, which differs only when it is full.
// Sessions outlive connections, as in Kafka: a client may resume its
// session on a new connection, and eviction reclaims abandoned ones.
//
// Memory: a session costs about 250 bytes per partition (measured: the
// key, the cached fields, a list element and a map entry; partitions of
// one topic share its name), so the default 1000 slots of sessions of
// 1000 partitions hold about 250 MB at most. The slot count bounds the
// number of sessions; a session's partitions are bounded by the request
// size limit only, as in Kafka.
//
// Concurrency: one mutex guards the cache and every session in it. A
// request takes it three times at most (to open the context, and to open
// or answer its session once the fetch is read), never while reading logs
// or waiting.

import (
	"container/list"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	sessionIDNone     int32 = 0  // INVALID_SESSION_ID
	sessionEpochFirst int32 = 0  // INITIAL_EPOCH: open a session
	sessionEpochFinal int32 = -1 // FINAL_EPOCH: no session
)

// nextSessionEpoch is the epoch after e: it wraps to 1, and a negative
// epoch stays final.
func nextSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return sessionEpochFinal
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// sessionKey names a partition in a session: by topic id in sessions of
// Fetch v13+, by topic name before.
type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// sessionPartition is one partition of a session.
type sessionPartition struct {
	key sessionKey
	// What the fetcher last asked.
	fetchOffset, fetcherLogStart         int64
	maxBytes                             int32
	currentLeaderEpoch, lastFetchedEpoch int32
	// What the session last answered; -1 before the first answer and
	// after an error, so that the partition is answered again.
	highWatermark, logStartOffset, lastStableOffset int64
}

func (p *sessionPartition) setRequest(rp *kmsg.FetchRequestTopicPartition) {
	p.fetchOffset, p.fetcherLogStart, p.maxBytes = rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes
	p.currentLeaderEpoch, p.lastFetchedEpoch = rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
}

// mustAnswer reports whether an incremental answer carries fp, and
// remembers what it carries (Kafka's CachedPartition rules).
func (p *sessionPartition) mustAnswer(fp *kmsg.FetchResponseTopicPartition) bool {
	must := len(fp.RecordBatches) > 0 || fp.PreferredReadReplica >= 0 || fp.DivergingEpoch.Epoch >= 0
	if fp.HighWatermark != p.highWatermark {
		must, p.highWatermark = true, fp.HighWatermark
	}
	if fp.LogStartOffset != p.logStartOffset {
		must, p.logStartOffset = true, fp.LogStartOffset
	}
	if fp.LastStableOffset != p.lastStableOffset {
		must, p.lastStableOffset = true, fp.LastStableOffset
	}
	if fp.ErrorCode != 0 {
		must, p.highWatermark = true, -1
	}
	return must
}

// fetchSession is one session; its fields belong to the cache's mutex.
type fetchSession struct {
	id         int32
	epoch      int32 // what the next request must carry
	privileged bool  // a follower's
	topicIDs   bool  // opened by Fetch v13+: keyed by topic id
	created    time.Time
	lastUsed   time.Time
	order      *list.List // of *sessionPartition, in answer order
	index      map[sessionKey]*list.Element
}

func (s *fetchSession) size() int { return s.order.Len() }

// evictable reports whether another session may take s's place by being
// worth more (Kafka keeps a session for its first eviction age unless a
// follower's needs the slot and s is a consumer's).
func (s *fetchSession) evictable(byPrivileged bool, age time.Duration) bool {
	old := s.lastUsed.Sub(s.created) > age
	return old || byPrivileged && !s.privileged
}

// worthLess orders sessions for eviction: consumers' before followers',
// then fewer partitions first, then lower id.
func worthLess(aPrivileged bool, aSize int, aID int32, b *fetchSession) bool {
	if aPrivileged != b.privileged {
		return !aPrivileged
	}
	if aSize != b.size() {
		return aSize < b.size()
	}
	return aID < b.id
}

// fetchSessionCache holds the agent's sessions. A nil *metrics records
// nothing.
type fetchSessionCache struct {
	slots       int
	evictionAge time.Duration
	metrics     *metrics

	mu         sync.Mutex
	sessions   map[int32]*fetchSession
	partitions int // over every session
}

func newFetchSessionCache(slots int, evictionAge time.Duration, m *metrics) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, evictionAge: evictionAge, metrics: m, sessions: map[int32]*fetchSession{}}
}

type fetchContextKind int

const (
	fetchSessionless fetchContextKind = iota
	fetchFull                         // answered in full, then opens a session
	fetchIncremental
	fetchSessionError
)

var fetchContextNames = [...]string{"sessionless", "full", "incremental", "error"}

func (k fetchContextKind) String() string { return fetchContextNames[k] }

// fetchContext is how one Fetch is served.
type fetchContext struct {
	kind      fetchContextKind
	errorCode int16         // for fetchSessionError
	session   *fetchSession // for fetchIncremental
	reqEpoch  int32
	// topics is what to read: the request's, or for an incremental fetch
	// every partition of the session, in its order.
	topics []kmsg.FetchRequestTopic
}

// newFetchContext decides how req is served and, for an incremental fetch,
// applies the request to its session and advances the session's epoch.
func (c *fetchSessionCache) newFetchContext(now time.Time, version int16, req *kmsg.FetchRequest) fetchContext {
	fc := fetchContext{reqEpoch: req.SessionEpoch, topics: req.Topics}
	if version < 7 { // no session fields before v7
		return fc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.report()
	if req.SessionEpoch == sessionEpochFirst || req.SessionEpoch == sessionEpochFinal {
		if req.SessionID != sessionIDNone {
			c.removeLocked(req.SessionID)
		}
		if req.SessionEpoch == sessionEpochFirst {
			fc.kind = fetchFull
		}
		return fc
	}
	s := c.sessions[req.SessionID]
	switch {
	case s == nil:
		return fetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}
	case s.epoch != req.SessionEpoch:
		return fetchContext{kind: fetchSessionError, errorCode: kerr.InvalidFetchSessionEpoch.Code}
	case s.topicIDs != (version >= 13):
		return fetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionTopicIDError.Code}
	}
	before := s.size()
	s.update(version, req)
	c.partitions += s.size() - before
	if s.size() == 0 {
		// Everything was forgotten: the session closes and the request is
		// answered as it stands.
		c.removeLocked(s.id)
		return fc
	}
	s.lastUsed = now
	s.epoch = nextSessionEpoch(s.epoch)
	fc.kind, fc.session, fc.topics = fetchIncremental, s, s.requestTopics()
	return fc
}

// update adds or updates the request's partitions and drops the forgotten
// ones.
func (s *fetchSession) update(version int16, req *kmsg.FetchRequest) {
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			k := newSessionKey(version, rt.TopicID, rt.Topic, rp.Partition)
			if e, ok := s.index[k]; ok {
				e.Value.(*sessionPartition).setRequest(rp)
				continue
			}
			p := &sessionPartition{key: k, highWatermark: -1, logStartOffset: -1, lastStableOffset: -1}
			p.setRequest(rp)
			s.index[k] = s.order.PushBack(p)
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, partition := range ft.Partitions {
			k := newSessionKey(version, ft.TopicID, ft.Topic, partition)
			if e, ok := s.index[k]; ok {
				s.order.Remove(e)
				delete(s.index, k)
			}
		}
	}
}

func newSessionKey(version int16, id [16]byte, topic string, partition int32) sessionKey {
	if version >= 13 {
		return sessionKey{topicID: id, partition: partition}
	}
	return sessionKey{topic: topic, partition: partition}
}

// requestTopics is the session as a request: a topic entry for each run
// of one topic's partitions in the session's order.
func (s *fetchSession) requestTopics() []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	for e := s.order.Front(); e != nil; e = e.Next() {
		p := e.Value.(*sessionPartition)
		if n := len(topics); n == 0 || topics[n-1].TopicID != p.key.topicID || topics[n-1].Topic != p.key.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.key.topic, p.key.topicID
			topics = append(topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p.key.partition, p.fetchOffset, p.fetcherLogStart, p.maxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.currentLeaderEpoch, p.lastFetchedEpoch
		rt := &topics[len(topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return topics
}

// answerIncremental cuts resp, read from fc.topics, down to the partitions
// that must be answered, and returns the top-level error code: a request
// that raced another one of the same session on its epoch is answered
// INVALID_FETCH_SESSION_EPOCH without partitions, as in Kafka.
func (c *fetchSessionCache) answerIncremental(fc fetchContext, version int16, resp *kmsg.FetchResponse) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	if s.epoch != nextSessionEpoch(fc.reqEpoch) {
		resp.Topics = resp.Topics[:0]
		return kerr.InvalidFetchSessionEpoch.Code
	}
	var moved []*list.Element
	topics := resp.Topics[:0]
	for _, ft := range resp.Topics {
		parts := ft.Partitions[:0]
		for pi := range ft.Partitions {
			fp := &ft.Partitions[pi]
			e, ok := s.index[newSessionKey(version, ft.TopicID, ft.Topic, fp.Partition)]
			if !ok || !e.Value.(*sessionPartition).mustAnswer(fp) {
				continue
			}
			if len(fp.RecordBatches) > 0 {
				moved = append(moved, e)
			}
			parts = append(parts, *fp)
		}
		if len(parts) > 0 {
			ft.Partitions = parts
			topics = append(topics, ft)
		}
	}
	resp.Topics = topics
	for _, e := range moved {
		s.order.MoveToBack(e)
	}
	return 0
}

// openSession makes a session of a full fetch's partitions, as answered in
// resp (read from topics), and returns its id; sessionIDNone when the
// cache has no room for it.
func (c *fetchSessionCache) openSession(now time.Time, version int16, privileged bool, topics []kmsg.FetchRequestTopic, resp *kmsg.FetchResponse) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.report()
	size := 0
	for _, ft := range resp.Topics {
		size += len(ft.Partitions)
	}
	if len(c.sessions) >= c.slots && !c.evictLocked(now, privileged, size) {
		return sessionIDNone
	}
	s := &fetchSession{id: c.newIDLocked(), epoch: nextSessionEpoch(sessionEpochFirst), privileged: privileged, topicIDs: version >= 13,
		created: now, lastUsed: now, order: list.New(), index: make(map[sessionKey]*list.Element, size)}
	// resp has the request's shape, partition for partition (fetchOnce).
	for ti := range topics {
		rt := &topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			fp := &resp.Topics[ti].Partitions[pi]
			k := newSessionKey(version, rt.TopicID, rt.Topic, rp.Partition)
			p := &sessionPartition{key: k, highWatermark: fp.HighWatermark, logStartOffset: fp.LogStartOffset, lastStableOffset: fp.LastStableOffset}
			if fp.ErrorCode != 0 {
				p.highWatermark = -1
			}
			p.setRequest(rp)
			if e, ok := s.index[k]; ok { // named twice: the later one wins
				e.Value = p
				continue
			}
			s.index[k] = s.order.PushBack(p)
		}
	}
	c.sessions[s.id] = s
	c.partitions += s.size()
	return s.id
}

// evictLocked frees a slot for a session of size partitions, if one may
// go (Kafka's rules, in the package comment).
func (c *fetchSessionCache) evictLocked(now time.Time, privileged bool, size int) bool {
	var stalest, cheapest *fetchSession
	for _, s := range c.sessions {
		if stalest == nil || s.lastUsed.Before(stalest.lastUsed) || s.lastUsed.Equal(stalest.lastUsed) && s.id < stalest.id {
			stalest = s
		}
		if s.evictable(privileged, c.evictionAge) && (cheapest == nil || worthLess(s.privileged, s.size(), s.id, cheapest)) {
			cheapest = s
		}
	}
	victim := cheapest
	switch {
	case stalest == nil:
		return false
	case now.Sub(stalest.lastUsed) > c.evictionAge:
		victim = stalest
	case cheapest == nil || worthLess(privileged, size, 0, cheapest):
		return false
	}
	c.removeLocked(victim.id)
	c.metrics.fetchSessionEvicted()
	return true
}

func (c *fetchSessionCache) removeLocked(id int32) {
	if s, ok := c.sessions[id]; ok {
		delete(c.sessions, id)
		c.partitions -= s.size()
	}
}

// newIDLocked picks an unused positive session id.
func (c *fetchSessionCache) newIDLocked() int32 {
	for {
		if id := rand.Int32N(math.MaxInt32) + 1; c.sessions[id] == nil {
			return id
		}
	}
}

// report sets the session gauges; the caller holds c.mu.
func (c *fetchSessionCache) report() {
	c.metrics.fetchSessions(len(c.sessions), c.partitions)
}
