package kafka

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReq is a v12 Fetch of topic "t"'s partitions, all at offset 0.
func fetchReq(id, epoch int32, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SessionID, req.SessionEpoch = id, epoch
	if len(partitions) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for _, p := range partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// fetchAnswer is what fetchOnce would answer for topics: every partition at
// HW hw[p] (10 if absent), with records where data names the partition.
func fetchAnswer(topics []kmsg.FetchRequestTopic, hw map[int32]int64, data ...int32) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	for _, rt := range topics {
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic, ft.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			fp := kmsg.NewFetchResponseTopicPartition()
			fp.Partition, fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = rp.Partition, 10, 10, 0
			if h, ok := hw[rp.Partition]; ok {
				fp.HighWatermark = h
			}
			fp.RecordBatches = []byte{}
			if slices.Contains(data, rp.Partition) {
				fp.RecordBatches = []byte{1, 2, 3}
			}
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	return resp
}

// partitionsOf lists the partitions an answer carries, in order.
func partitionsOf(resp *kmsg.FetchResponse) []int32 {
	out := []int32{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
	}
	return out
}

// openTestSession opens a session of partitions of "t" at now.
func openTestSession(t *testing.T, c *fetchSessionCache, now time.Time, privileged bool, partitions ...int32) int32 {
	t.Helper()
	req := fetchReq(0, 0, partitions...)
	fc := c.newFetchContext(now, 12, req)
	if fc.kind != fetchFull {
		t.Fatalf("epoch 0: %v context, want full", fc.kind)
	}
	return c.openSession(now, 12, privileged, fc.topics, fetchAnswer(fc.topics, nil))
}

// TestFetchSessionContexts: Kafka's choice of context for each
// (SessionID, SessionEpoch), and a full request closing the named session.
func TestFetchSessionContexts(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(10, 2*time.Minute, nil)
	id := openTestSession(t, c, now, false, 0, 1)
	if id == sessionIDNone {
		t.Fatal("no session opened with free slots")
	}
	for _, tt := range []struct {
		name      string
		version   int16
		id, epoch int32
		kind      fetchContextKind
		code      int16
	}{
		{"v6 has no sessions", 6, 0, 0, fetchSessionless, 0},
		{"final epoch, no id (kafka-go)", 12, -1, -1, fetchSessionless, 0},
		{"final epoch, no session", 12, 0, -1, fetchSessionless, 0},
		{"initial epoch", 12, 0, 0, fetchFull, 0},
		{"unknown session", 12, id + 1, 1, fetchSessionError, kerr.FetchSessionIDNotFound.Code},
		{"id 0 with epoch 1", 12, 0, 1, fetchSessionError, kerr.FetchSessionIDNotFound.Code},
		{"wrong epoch", 12, id, 2, fetchSessionError, kerr.InvalidFetchSessionEpoch.Code},
		{"topic ids in a session of names", 13, id, 1, fetchSessionError, kerr.FetchSessionTopicIDError.Code},
	} {
		fc := c.newFetchContext(now, tt.version, fetchReq(tt.id, tt.epoch))
		if fc.kind != tt.kind || fc.errorCode != tt.code {
			t.Errorf("%s: %v context, error %d; want %v, %d", tt.name, fc.kind, fc.errorCode, tt.kind, tt.code)
		}
	}
	fc := c.newFetchContext(now, 12, fetchReq(id, 1))
	if fc.kind != fetchIncremental || len(fc.topics) != 1 || len(fc.topics[0].Partitions) != 2 {
		t.Fatalf("epoch 1: %v context of %v, want incremental over the session's 2 partitions", fc.kind, fc.topics)
	}
	if fc := c.newFetchContext(now, 12, fetchReq(id, 1)); fc.kind != fetchSessionError || fc.errorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 1 again: %v, %d; want INVALID_FETCH_SESSION_EPOCH", fc.kind, fc.errorCode)
	}
	// A full fetch naming the session closes it.
	if fc := c.newFetchContext(now, 12, fetchReq(id, -1, 0)); fc.kind != fetchSessionless {
		t.Fatalf("final epoch: %v", fc.kind)
	}
	if fc := c.newFetchContext(now, 12, fetchReq(id, 2)); fc.errorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("a session closed by a final-epoch fetch answers %d", fc.errorCode)
	}
	// Forgetting every partition closes the session too.
	id = openTestSession(t, c, now, false, 0)
	req := fetchReq(id, 1)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{0}}}
	if fc := c.newFetchContext(now, 12, req); fc.kind != fetchSessionless || len(c.sessions) != 0 {
		t.Fatalf("forgetting all: %v context, %d sessions left", fc.kind, len(c.sessions))
	}
	if c.partitions != 0 {
		t.Fatalf("%d partitions counted in an empty cache", c.partitions)
	}
}

// TestFetchSessionIncremental: an incremental answer carries only what
// changed, partitions that returned records move to the end, errors are
// answered until they clear, and the request's changes reach the session.
func TestFetchSessionIncremental(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(10, 2*time.Minute, nil)
	id := openTestSession(t, c, now, false, 0, 1, 2)
	epoch := int32(1)
	// poll runs one incremental fetch: req's changes, then an answer with
	// hw and data, and returns the partitions answered and the order the
	// session read them in.
	poll := func(req *kmsg.FetchRequest, hw map[int32]int64, errs map[int32]int16, data ...int32) (answered, order []int32) {
		t.Helper()
		req.SessionID, req.SessionEpoch = id, epoch
		fc := c.newFetchContext(now, 12, req)
		if fc.kind != fetchIncremental {
			t.Fatalf("epoch %d: %v context, error %d", epoch, fc.kind, fc.errorCode)
		}
		epoch++
		resp := fetchAnswer(fc.topics, hw, data...)
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				fp := &resp.Topics[ti].Partitions[pi]
				fp.ErrorCode = errs[fp.Partition]
			}
		}
		if code := c.answerIncremental(fc, 12, resp); code != 0 {
			t.Fatalf("epoch %d: answered error %d", epoch-1, code)
		}
		return partitionsOf(resp), partitionsOf(fetchAnswer(fc.topics, nil))
	}
	steps := []struct {
		name          string
		req           *kmsg.FetchRequest
		hw            map[int32]int64
		errs          map[int32]int16
		data          []int32
		answer, order []int32
	}{
		{name: "nothing new", answer: []int32{}, order: []int32{0, 1, 2}},
		{name: "HW of 1 moved", hw: map[int32]int64{1: 11}, answer: []int32{1}, order: []int32{0, 1, 2}},
		{name: "records on 0", hw: map[int32]int64{1: 11}, data: []int32{0}, answer: []int32{0}, order: []int32{0, 1, 2}},
		{name: "0 moved behind the others", hw: map[int32]int64{1: 11}, answer: []int32{}, order: []int32{1, 2, 0}},
		{name: "error on 2", hw: map[int32]int64{1: 11}, errs: map[int32]int16{2: kerr.NotLeaderForPartition.Code}, answer: []int32{2}, order: []int32{1, 2, 0}},
		{name: "2 answered again once the error clears", hw: map[int32]int64{1: 11}, answer: []int32{2}, order: []int32{1, 2, 0}},
		{name: "add 5, forget 1", req: func() *kmsg.FetchRequest {
			r := fetchReq(0, 0, 5)
			r.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{1}}}
			return r
		}(), hw: map[int32]int64{1: 11}, answer: []int32{5}, order: []int32{2, 0, 5}},
	}
	for _, st := range steps {
		req := st.req
		if req == nil {
			req = fetchReq(0, 0)
		}
		answered, order := poll(req, st.hw, st.errs, st.data...)
		if !slices.Equal(answered, st.answer) || !slices.Equal(order, st.order) {
			t.Fatalf("%s: answered %v reading %v, want %v reading %v", st.name, answered, order, st.answer, st.order)
		}
	}
	// A new fetch offset reaches the session.
	req := fetchReq(0, 0, 2)
	req.Topics[0].Partitions[0].FetchOffset = 7
	req.SessionID, req.SessionEpoch = id, epoch
	fc := c.newFetchContext(now, 12, req)
	for _, rp := range fc.topics[0].Partitions {
		if rp.Partition == 2 && rp.FetchOffset != 7 {
			t.Fatalf("partition 2 read at %d, want the requested 7", rp.FetchOffset)
		}
	}
	// Another request of the session overtook this one: its answer is
	// INVALID_FETCH_SESSION_EPOCH without partitions.
	c.newFetchContext(now, 12, fetchReq(id, epoch+1))
	resp := fetchAnswer(fc.topics, nil, 0)
	if code := c.answerIncremental(fc, 12, resp); code != kerr.InvalidFetchSessionEpoch.Code || len(resp.Topics) != 0 {
		t.Fatalf("overtaken answer: error %d with %d topics", code, len(resp.Topics))
	}
}

// TestFetchSessionTopicIDs: a v13+ session is keyed by topic id, in
// requests, forgotten topics and answers alike.
func TestFetchSessionTopicIDs(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(10, 2*time.Minute, nil)
	a, b := [16]byte{1}, [16]byte{2}
	req := kmsg.NewPtrFetchRequest()
	req.SessionEpoch = 0
	for _, id := range [][16]byte{a, b} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
	}
	fc := c.newFetchContext(now, 13, req)
	id := c.openSession(now, 13, false, fc.topics, fetchAnswer(fc.topics, nil))
	inc := kmsg.NewPtrFetchRequest()
	inc.SessionID, inc.SessionEpoch = id, 1
	inc.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{TopicID: a, Partitions: []int32{0}}}
	fc = c.newFetchContext(now, 13, inc)
	if fc.kind != fetchIncremental || len(fc.topics) != 1 || fc.topics[0].TopicID != b {
		t.Fatalf("after forgetting topic id a: %v context reading %v", fc.kind, fc.topics)
	}
	resp := fetchAnswer(fc.topics, map[int32]int64{0: 12})
	if code := c.answerIncremental(fc, 13, resp); code != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != b {
		t.Fatalf("answer: error %d, topics %v", code, resp.Topics)
	}
}

// TestFetchSessionEviction: Kafka's eviction rules, with logical time.
func TestFetchSessionEviction(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg).get()
	age := 2 * time.Minute
	c := newFetchSessionCache(2, age, m)
	t0 := time.Unix(1000, 0)
	partitions := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	touch := func(now time.Time, id int32) {
		t.Helper()
		s := c.sessions[id]
		if s == nil {
			t.Fatalf("session %d is gone", id)
		}
		fc := c.newFetchContext(now, 12, fetchReq(id, s.epoch))
		if fc.kind != fetchIncremental {
			t.Fatalf("touch %d: %v", id, fc.kind)
		}
		c.answerIncremental(fc, 12, fetchAnswer(fc.topics, nil))
	}
	a := openTestSession(t, c, t0, false, partitions(2)...)
	b := openTestSession(t, c, t0, false, partitions(3)...)
	steps := []struct {
		name       string
		at         time.Duration
		touch      []int32 // sessions used first
		privileged bool
		size       int
		opens      bool
		evicted    int32 // 0: none
	}{
		{name: "young sessions stay, even for a bigger one", at: time.Second, size: 5},
		{name: "an equal session does not evict an old one", at: 3 * time.Minute, touch: []int32{a, b}, size: 2},
		{name: "a bigger one evicts the smallest old one", at: 3*time.Minute + time.Second, size: 3, opens: true, evicted: a},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		for _, id := range st.touch {
			touch(now, id)
		}
		before := describeCache(c)
		id := c.openSession(now, 12, st.privileged, fetchReq(0, 0, partitions(st.size)...).Topics, fetchAnswer(fetchReq(0, 0, partitions(st.size)...).Topics, nil))
		if (id != sessionIDNone) != st.opens {
			t.Fatalf("%s: opened %d, want opened %v (cache %v)", st.name, id, st.opens, before)
		}
		if st.evicted != 0 && c.sessions[st.evicted] != nil {
			t.Fatalf("%s: session %d not evicted (cache %v)", st.name, st.evicted, describeCache(c))
		}
	}
	// A follower's session takes a young consumer's place at once, the
	// smallest first, and is itself kept against consumers.
	now := t0.Add(3*time.Minute + 2*time.Second)
	young := c.sessions
	var smallest int32
	for id, s := range young {
		if smallest == 0 || s.size() < young[smallest].size() || s.size() == young[smallest].size() && id < smallest {
			smallest = id
		}
	}
	f := c.openSession(now, 12, true, fetchReq(0, 0, 0).Topics, fetchAnswer(fetchReq(0, 0, 0).Topics, nil))
	if f == sessionIDNone || c.sessions[smallest] != nil {
		t.Fatalf("follower session %d; consumer session %d still there (cache %v)", f, smallest, describeCache(c))
	}
	// Unused for longer than the age, the stalest session goes for any
	// newcomer, however small.
	now = now.Add(age + time.Second)
	touch(now, f)
	var stale int32
	for id := range c.sessions {
		if id != f {
			stale = id
		}
	}
	if id := openTestSession(t, c, now.Add(time.Second), false, 0); id == sessionIDNone || c.sessions[stale] != nil {
		t.Fatalf("stale session %d not evicted for a new one (cache %v)", stale, describeCache(c))
	}
	if got := testutil.ToFloat64(m.fetchSessionEvictions); got != 3 {
		t.Fatalf("evictions counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.fetchSessionCount); got != 2 {
		t.Fatalf("sessions gauge %v, want 2", got)
	}
	if got, want := testutil.ToFloat64(m.fetchSessionPartitions), float64(c.sessions[f].size()+1); got != want {
		t.Fatalf("partitions gauge %v, want %v", got, want)
	}
	// No slots: no session, ever.
	off := newFetchSessionCache(0, age, nil)
	if id := openTestSession(t, off, t0, false, 0); id != sessionIDNone {
		t.Fatalf("a cache of 0 slots opened session %d", id)
	}
}

// describeCache describes the cache for failure messages.
func describeCache(c *fetchSessionCache) string {
	out := ""
	for id, s := range c.sessions {
		out += fmt.Sprintf("[%d: %d partitions, privileged %v, created %v, used %v] ", id, s.size(), s.privileged, s.created.Unix(), s.lastUsed.Unix())
	}
	return out
}

// TestFetchSessionCacheConcurrent: fetchers racing on a small cache, two
// taking turns on each client's session, keep its counts right.
func TestFetchSessionCacheConcurrent(t *testing.T) {
	const seed = 42
	c := newFetchSessionCache(3, time.Millisecond, nil)
	type client struct {
		mu        sync.Mutex
		id, epoch int32
	}
	clients := make([]client, 4)
	var wg sync.WaitGroup
	for w := range 8 {
		cl := &clients[w%len(clients)]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			now := time.Unix(1000, 0)
			for range 500 {
				now = now.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
				cl.mu.Lock()
				req := fetchReq(cl.id, cl.epoch, int32(rng.IntN(5)))
				cl.mu.Unlock()
				if rng.IntN(4) == 0 {
					req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{int32(rng.IntN(5))}}}
				}
				fc := c.newFetchContext(now, 12, req)
				resp := fetchAnswer(fc.topics, map[int32]int64{0: int64(rng.IntN(3))}, int32(rng.IntN(5)))
				id, epoch := int32(0), int32(0)
				switch fc.kind {
				case fetchFull:
					if id = c.openSession(now, 12, rng.IntN(2) == 0, fc.topics, resp); id != sessionIDNone {
						epoch = 1
					}
				case fetchIncremental:
					if c.answerIncremental(fc, 12, resp) == 0 {
						id, epoch = req.SessionID, nextSessionEpoch(req.SessionEpoch)
					}
				}
				cl.mu.Lock()
				cl.id, cl.epoch = id, epoch
				cl.mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, s := range c.sessions {
		total += s.size()
		if len(s.index) != s.size() {
			t.Fatalf("session %d: %d indexed, %d in order", s.id, len(s.index), s.size())
		}
	}
	if len(c.sessions) > 3 || total != c.partitions {
		t.Fatalf("%d sessions of %d partitions, %d counted", len(c.sessions), total, c.partitions)
	}
}

// TestFetchSessionOverlappingRequests: a request sent with the next epoch
// while the previous one is still being answered (a pipelining client)
// is served, and the overtaken one is answered INVALID_FETCH_SESSION_EPOCH
// if the session moved on before its answer; under -race this also checks
// that answering takes the cache's lock.
func TestFetchSessionOverlappingRequests(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute, nil)
	now := time.Unix(1000, 0)
	overtaken := 0
	for range 200 {
		id := openTestSession(t, c, now, false, 0, 1)
		first := c.newFetchContext(now, 12, fetchReq(id, 1))
		var wg sync.WaitGroup
		var firstCode, secondCode int16
		wg.Go(func() { firstCode = c.answerIncremental(first, 12, fetchAnswer(first.topics, nil, 0)) })
		wg.Go(func() {
			second := c.newFetchContext(now, 12, fetchReq(id, 2, 1))
			if second.kind != fetchIncremental {
				t.Errorf("the pipelined request got a %v context, error %d", second.kind, second.errorCode)
				return
			}
			secondCode = c.answerIncremental(second, 12, fetchAnswer(second.topics, nil, 1))
		})
		wg.Wait()
		switch {
		case secondCode != 0:
			t.Fatalf("the pipelined request answered %d", secondCode)
		case firstCode == kerr.InvalidFetchSessionEpoch.Code:
			overtaken++
		case firstCode != 0:
			t.Fatalf("the first request answered %d", firstCode)
		}
		c.newFetchContext(now, 12, fetchReq(id, -1)) // close it
	}
	t.Logf("%d of 200 first requests overtaken", overtaken)
}
