package peer

// The follower's side of a fetch session (KIP-227), as Kafka's
// FetchSessionHandler keeps it: the leader's session holds, per
// partition, what the follower last asked, so a request names only the
// partitions whose offset, leader epoch or byte limit changed (and those
// to forget), and the answer holds only the partitions with something
// new. A follower of 1,000 quiet partitions then sends and receives
// nearly empty requests.
//
//	no session ──full fetch, epoch 0──▶ answered with id N ──▶ session N, epoch 1
//	     ▲                              answered with id 0 ──▶ no session (full again)
//	     │                                                      │
//	     │         incremental fetch, epoch e (changes only) ◀──┘
//	     │              answered ──▶ epoch e+1 (wraps to 1)
//	     └── ErrFetchSessionLost: forget the id; any other failure: keep
//	         the id, so that the next full fetch (epoch 0) closes it
//
// The leader's side is agent/kafka/fetchsession.go.

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"slices"
)

// Session epochs with a meaning of their own (KIP-227).
const (
	sessionEpochInitial int32 = 0 // open a session
)

// FetchSession is one follower's fetch session with one leader. It is
// not safe for concurrent use: one fetch loop owns it, and sends one
// request at a time.
type FetchSession struct {
	id    int32
	epoch int32 // of the next request; 0 while no session is open
	// held is what the leader's session holds for each partition, as of
	// the last answered request.
	held map[TopicPartition]FetchPartition
	// pending is what it will hold once the request Next built is
	// answered.
	pending map[TopicPartition]FetchPartition
}

// NewFetchSession is a session not yet opened: the first request is a
// full fetch that opens it.
func NewFetchSession() *FetchSession { return &FetchSession{} }

// ID is the session's id, 0 while none is open.
func (s *FetchSession) ID() int32 { return s.id }

// Next fills req's session fields and partitions for fetching want (each
// partition once): every partition in a full fetch, else only those that
// changed since the leader's session last heard of them, and the
// partitions it holds that want leaves out, to forget. It reports whether
// the request is a full one.
func (s *FetchSession) Next(req *FetchRequest, want []FetchPartition) (full bool) {
	s.pending = make(map[TopicPartition]FetchPartition, len(want))
	for _, p := range want {
		s.pending[p.TopicPartition] = p
	}
	req.SessionID, req.SessionEpoch, req.Forgotten = s.id, s.epoch, nil
	if s.epoch == sessionEpochInitial {
		req.Partitions = want
		return true
	}
	req.Partitions = nil
	for _, p := range want {
		if held, ok := s.held[p.TopicPartition]; !ok || held != p {
			req.Partitions = append(req.Partitions, p)
		}
	}
	for tp := range s.held {
		if _, ok := s.pending[tp]; !ok {
			req.Forgotten = append(req.Forgotten, tp)
		}
	}
	slices.SortFunc(req.Forgotten, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return false
}

// Answered takes the answer to the request Next built last.
func (s *FetchSession) Answered(resp FetchResponse) {
	switch {
	case s.epoch == sessionEpochInitial && resp.SessionID != 0:
		s.id, s.epoch, s.held = resp.SessionID, 1, s.pending
	case s.epoch == sessionEpochInitial:
		// The leader opened no session (its cache is full, or sessions
		// are off): fetch in full again, and ask again.
		s.id, s.held = 0, nil
	case resp.SessionID != s.id:
		// An incremental answer of another session: start over.
		s.reset(false)
		return
	default:
		s.epoch, s.held = nextEpoch(s.epoch), s.pending
	}
	s.pending = nil
}

// Failed takes a request that got no answer, or an error for an answer:
// the next request is a full fetch. A session the leader lost is
// forgotten; any other is named again with epoch 0, which closes it on
// the leader before opening the next one.
func (s *FetchSession) Failed(err error) { s.reset(errors.Is(err, ErrFetchSessionLost)) }

func (s *FetchSession) reset(lost bool) {
	if lost {
		s.id = 0
	}
	s.epoch, s.held, s.pending = sessionEpochInitial, nil, nil
}

// Held is what the leader's session holds, by partition, as of the last
// answer; for tests.
func (s *FetchSession) Held() map[TopicPartition]FetchPartition { return maps.Clone(s.held) }

// nextEpoch is the epoch after e: it wraps to 1 (0 would open a new
// session).
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}
