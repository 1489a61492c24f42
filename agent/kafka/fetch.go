package kafka

// Fetch (key 1), versions 4-17.
//
// Fetch sessions (KIP-227) are kept as in Kafka (fetchsession.go): epoch 0
// opens a session whose id the answer carries, later requests send only
// what changed (and ForgottenTopics) and get only the partitions with
// records, a new HW or log start, or an error; epoch -1 is a sessionless
// full fetch. Sessions are keyed by topic id from v13 on. The cache holds
// Config.FetchSessionCacheSlots sessions with Kafka's eviction rules; with
// 0 slots every answer carries session id 0. A follower (docs/design.md
// §6) fetches every partition it follows from this agent in one request,
// in a session, which is privileged as Kafka's followers' are. A long
// poll reads every partition of the session until MinBytes are there, and
// the answer is cut down to the changed partitions only once, at the end.
// The cache is one pool, not Kafka's 8 shards, which a client sees only
// when it is full.
//
// At read_committed a partition's records stop before its last stable
// offset and carry the aborted transactions they overlap (readcommitted.go);
// every answer carries the last stable offset, and a session answers a
// partition whose last stable offset moved, as Kafka does. The first batch of
// the first partition with data is returned whole even when it is larger
// than the byte limits, so consumers always make progress (KIP-74).
// Long polls wake on any new data on this agent and re-read. A partition
// with nothing to return carries an empty record set, never a null one
// (librdkafka rejects null as a protocol error; Kafka sends empty).
// An answer whose batches hold no record a consumer is handed (the
// cleaner's emptied batches, markers) reads on past its segment until one
// does (recordless.go): Kafka stops at the segment's end, which
// kafka-python 2.0 and kafkajs 2.2 cannot step over.
// Batches stored before Produce bounded decompression that decompress past
// the limit are served as empty batches, to consumers and followers alike
// (quarantine.go). Offsets below the local log are read from the store, after every
// partition read locally, so a slow store never delays those; such a read
// waits at most until MaxWaitMs or Config.RemoteFetchMaxWait, whichever is
// later, then the partition answers empty while the read goes on and warms
// the cache (Kafka's remote.fetch.max.wait.ms).
//
// A fetch with a replica id (>= 0) is a follower's (docs/design.md §6): it reads
// the local log up to its end rather than the HW, refuses offsets below the
// local log start with OFFSET_MOVED_TO_TIERED_STORAGE (the follower copies
// only the local tail; older records are in the bucket), and each read,
// of every partition asked (also those the byte limit leaves out of the
// answer), counts towards the HW and the ISR. A follower's long poll wakes
// on any append, HW move or state change of the partitions it asks for,
// and of no others, so it answers as soon as the leader writes to one of
// them, before the leader's fsync. Other fetches wake on any HW move on
// this agent.
//
// Under a consumer_byte_rate quota a fetch returns at most one sample's
// worth of it (the first batch still whole), and long-poll waits do not
// count as handling time (quota.go).
//
// Authorization (authorize.go): READ on each topic; a follower's fetch
// needs CLUSTER_ACTION on the CLUSTER instead. Either denied answers
// TOPIC_AUTHORIZATION_FAILED on the partitions, as in Kafka.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleFetch(ctx context.Context, s *Server, r *request, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if r.conn != nil && req.Rack != "" {
		r.conn.rack = req.Rack
	}
	fc := s.sessions.newFetchContext(time.Now(), r.version, req)
	if fc.kind == fetchSessionError {
		s.metrics.fetched(fc.kind)
		resp.ErrorCode = fc.errorCode
		return resp, nil
	}
	read := req
	if fc.kind == fetchIncremental {
		// Read every partition of the session, with the request's limits.
		session := *req
		session.Topics, session.ForgottenTopics = fc.topics, nil
		read = &session
	}
	if limit, ok := s.fetchBytesCap(r); ok && read.MaxBytes > limit {
		capped := *read // under a consumer_byte_rate (quota.go)
		capped.MaxBytes = limit
		read = &capped
	}
	s.longPoll(ctx, r, read, resp)
	switch {
	case ctx.Err() != nil:
		// The connection or the server is closing: nobody would learn
		// the id of a session opened now.
	case fc.kind == fetchFull:
		resp.SessionID = s.sessions.openSession(time.Now(), r.version, fetchReplicaID(r, req) >= 0, read.Topics, resp)
	case fc.kind == fetchIncremental:
		resp.SessionID = fc.session.id
		resp.ErrorCode = s.sessions.answerIncremental(fc, r.version, resp)
	}
	// Counted once answered: an incremental fetch that lost its epoch to
	// a concurrent one ends as a session error.
	if resp.ErrorCode != 0 {
		s.metrics.fetched(fetchSessionError)
	} else {
		s.metrics.fetched(fc.kind)
	}
	return resp, nil
}

// longPoll fills resp from the logs, waiting until req's MinBytes are
// there, a partition has an error, or MaxWaitMillis (at most
// Config.MaxFetchWait) has passed.
func (s *Server) longPoll(ctx context.Context, r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if wait > s.cfg.MaxFetchWait {
		wait = s.cfg.MaxFetchWait
	}
	deadline := time.Now().Add(wait)
	var wake chan struct{}
	if fetchReplicaID(r, req) >= 0 {
		// Watched before the first read, so that no append is missed.
		wake = make(chan struct{}, 1)
		watched := s.watchReplicaFetch(r, req, wake)
		defer func() {
			for _, p := range watched {
				p.UnwatchData(wake)
			}
		}()
	}
	for {
		signal := (<-chan struct{})(wake)
		if wake == nil {
			signal = s.topics.DataSignal() // taken before reading, so no append is missed
		}
		total := s.fetchOnce(ctx, deadline, r, req, resp)
		if total >= int(req.MinBytes) || total > 0 && req.MinBytes <= 1 || hasError(resp) {
			return
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return
		}
		timer := time.NewTimer(remaining)
		waiting := time.Now()
		select {
		case <-signal:
			timer.Stop()
			r.waited += time.Since(waiting)
		case <-timer.C:
			timer.Stop()
			r.waited += time.Since(waiting)
			s.fetchOnce(ctx, time.Now(), r, req, resp)
			return
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
}

// watchReplicaFetch makes the appends, HW moves and state changes of
// every partition a follower fetches wake wake, and returns them for
// UnwatchData. A follower's long poll wakes on its own partitions only
// (however many it fetches), so the cost of an append does not grow with
// the number of followers waiting on other partitions; and it wakes at
// the append, before the leader's fsync, so that the copies overlap it.
// Every other fetch wakes on any HW move on this agent.
func (s *Server) watchReplicaFetch(r *request, req *kmsg.FetchRequest, wake chan<- struct{}) []Partition {
	var watched []Partition
	for _, rt := range req.Topics {
		var t *Topic
		var ok bool
		if r.version >= 13 {
			t, ok = s.topics.TopicByID(rt.TopicID)
		} else {
			t, ok = s.topics.Topic(rt.Topic)
		}
		if !ok {
			continue // answered UNKNOWN_TOPIC_OR_PARTITION at once
		}
		for _, rp := range rt.Partitions {
			if i := rp.Partition; i >= 0 && int(i) < len(t.Partitions) {
				p := t.Partitions[i]
				p.WatchData(wake)
				watched = append(watched, p)
			}
		}
	}
	return watched
}

func hasError(resp *kmsg.FetchResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return true
			}
		}
	}
	return false
}

// fetchOnce fills resp from the current logs and returns the record bytes.
// Partitions served from local disk go first; those whose offset is only
// in the store go last, so a slow store never holds local ones back. Reads
// from the store wait at most until deadline, or RemoteFetchMaxWait if
// that is later; a partition whose remote read is not done by then answers
// with no records (the read goes on and warms the cache).
func (s *Server) fetchOnce(ctx context.Context, deadline time.Time, r *request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) int {
	ctx, cancel := context.WithDeadline(ctx, maxTime(deadline, time.Now().Add(s.cfg.RemoteFetchMaxWait)))
	defer cancel()
	resp.Topics = resp.Topics[:0]
	maxTotal := int(req.MaxBytes)
	if maxTotal <= 0 {
		maxTotal = 50 << 20
	}
	type read struct {
		t          *Topic
		p          Partition
		rp         kmsg.FetchRequestTopicPartition
		topic, idx int
	}
	var local, remote []read
	follower := fetchReplicaID(r, req) >= 0
	followerDenied := follower && !s.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	if follower && !followerDenied {
		s.replicaFetched(r.conn, fetchReplicaID(r, req))
	}
	for ti, rt := range req.Topics {
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic, ft.TopicID = rt.Topic, rt.TopicID
		var t *Topic
		var ok bool
		if r.version >= 13 {
			t, ok = s.topics.TopicByID(rt.TopicID)
		} else {
			t, ok = s.topics.Topic(rt.Topic)
		}
		denied := followerDenied || !follower && s.deniedTopic(r, kmsg.ACLOperationRead, rt.Topic, t, ok, r.version >= 13)
		for _, rp := range rt.Partitions {
			fp := kmsg.NewFetchResponseTopicPartition()
			fp.Partition = rp.Partition
			fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka rejects a null record set (size -1)
			// as a protocol error, and Kafka always sends an empty one.
			fp.RecordBatches = []byte{}
			switch {
			case denied:
				fp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !ok && r.version >= 13:
				fp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				fp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				p := t.Partitions[rp.Partition]
				rd := read{t, p, rp, ti, len(ft.Partitions)}
				if p.ReadsFromStore(rp.FetchOffset) {
					remote = append(remote, rd)
				} else {
					local = append(local, rd)
				}
			}
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	total := 0
	for _, rd := range append(local, remote...) {
		fp := &resp.Topics[rd.topic].Partitions[rd.idx]
		if replicaID := fetchReplicaID(r, req); replicaID >= 0 {
			total += s.replicaFetchPartition(ctx, rd.t, rd.p, replicaID, rd.rp, maxTotal-total, total == 0, fp)
			continue
		}
		total += s.fetchPartition(ctx, rd.t, rd.p, rd.rp, req.IsolationLevel == isolationReadCommitted, maxTotal-total, total == 0, fp)
	}
	return total
}

func (s *Server) fetchPartition(ctx context.Context, t *Topic, p PartitionReader, rp kmsg.FetchRequestTopicPartition, committed bool, budget int, first bool, fp *kmsg.FetchResponseTopicPartition) int {
	if p.Leader() != s.cluster.AgentID() {
		fp.ErrorCode = kerr.NotLeaderForPartition.Code
		return 0
	}
	if e := rp.CurrentLeaderEpoch; e >= 0 {
		switch le := p.LeaderEpoch(); {
		case e < le:
			fp.ErrorCode = kerr.FencedLeaderEpoch.Code
			return 0
		case e > le:
			fp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return 0
		}
	}
	hw, lso := p.HighWatermark(), p.LastStableOffset()
	fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = hw, lso, p.LogStartOffset()
	if committed {
		fp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	maxBytes := int(rp.PartitionMaxBytes)
	if maxBytes > budget {
		maxBytes = budget
	}
	if maxBytes <= 0 && !first {
		return 0
	}
	data, err := p.Read(ctx, rp.FetchOffset, maxBytes, first)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return 0 // the store is slow: nothing this time, the cache warms meanwhile
	}
	if err != nil {
		// An error the table does not know came from reading the disk.
		if fp.ErrorCode = errorCode(err); fp.ErrorCode == kerr.UnknownServerError.Code {
			fp.ErrorCode = kerr.KafkaStorageError.Code
		}
		return 0
	}
	data = readPastRecordless(ctx, p, data, maxBytes, first)
	if committed {
		var next int64
		data, next = stableBatches(data, lso)
		if fp.AbortedTransactions, err = abortedTransactions(ctx, p, rp.FetchOffset, next); err != nil {
			if fp.ErrorCode = errorCode(err); fp.ErrorCode == kerr.UnknownServerError.Code {
				fp.ErrorCode = kerr.KafkaStorageError.Code
			}
			return 0
		}
	}
	data = s.quarantine(ctx, t, rp.Partition, p.DecompressionChecks(), fp.LogStartOffset, data)
	if len(data) > 0 {
		fp.RecordBatches = data
	}
	s.metrics.out(t.Name, data)
	return len(data)
}

// fetchReplicaID is the sender's agent id when a follower fetches, -1 for
// consumers (the field moved into ReplicaState in v15, KIP-903).
func fetchReplicaID(r *request, req *kmsg.FetchRequest) int32 {
	if r.version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// replicaFetchPartition serves a follower: records up to the log end, not
// the HW, and the fetch counted towards the HW and the ISR. The follower
// learns the HW and the leader's local log start from the answer. Batches
// stored before the decompression bound pass the consumers' rule
// (quarantine.go), so a follower never copies a bomb. A partition that
// finds the response's byte limit used up reads nothing, but its fetch is
// recorded all the same (as Kafka records every partition of a follower's
// fetch): a follower of many partitions must not fall out of the ISR of
// those that the busy ones crowd out of its responses.
func (s *Server) replicaFetchPartition(ctx context.Context, t *Topic, p Partition, replicaID int32, rp kmsg.FetchRequestTopicPartition, budget int, first bool, fp *kmsg.FetchResponseTopicPartition) int {
	maxBytes := max(min(int(rp.PartitionMaxBytes), budget), 0)
	res, err := p.ReplicaRead(replicaID, rp.CurrentLeaderEpoch, rp.FetchOffset, maxBytes, first)
	fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
	if err != nil {
		if fp.ErrorCode = errorCode(err); fp.ErrorCode == kerr.UnknownServerError.Code {
			fp.ErrorCode = kerr.KafkaStorageError.Code
		}
		return 0
	}
	records := s.quarantine(ctx, t, rp.Partition, p.DecompressionChecks(), res.LogStartOffset, res.Records)
	if len(records) > 0 {
		fp.RecordBatches = records
	}
	return len(records)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
