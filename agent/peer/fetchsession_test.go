package peer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func fp(partition int32, offset int64) FetchPartition {
	return FetchPartition{TopicPartition: TopicPartition{"t", partition}, LeaderEpoch: 3, Offset: offset, MaxBytes: 1 << 20}
}

// describe is a request as "id/epoch [partition@offset ...] -[forgotten ...]".
func describe(req FetchRequest) string {
	var parts, forgotten []string
	for _, p := range req.Partitions {
		parts = append(parts, fmt.Sprintf("%d@%d", p.Partition, p.Offset))
	}
	for _, p := range req.Forgotten {
		forgotten = append(forgotten, fmt.Sprint(p.Partition))
	}
	return fmt.Sprintf("%d/%d [%s] -[%s]", req.SessionID, req.SessionEpoch, strings.Join(parts, " "), strings.Join(forgotten, " "))
}

// TestFetchSessionRequests: a script of the follower's session: each step
// wants some partitions, expects the request built, then answers it (with
// a session id, or fails it with an error).
func TestFetchSessionRequests(t *testing.T) {
	lost := fmt.Errorf("%w: %w", ErrFetchSessionLost, kerr.FetchSessionIDNotFound)
	cut := errors.New("connection reset")
	type step struct {
		want   []FetchPartition
		expect string
		answer int32 // the answer's session id, unless err
		err    error
	}
	steps := []step{
		// Full fetch, opening a session.
		{want: []FetchPartition{fp(0, 5), fp(1, 7), fp(2, 0)}, expect: "0/0 [0@5 1@7 2@0] -[]", answer: 42},
		// Nothing changed: an empty incremental request.
		{want: []FetchPartition{fp(0, 5), fp(1, 7), fp(2, 0)}, expect: "42/1 [] -[]", answer: 42},
		// One moved on, one left (backing off), one joined.
		{want: []FetchPartition{fp(0, 9), fp(2, 0), fp(3, 1)}, expect: "42/2 [0@9 3@1] -[1]", answer: 42},
		// The one that left comes back where it was: it is new to the
		// leader's session.
		{want: []FetchPartition{fp(0, 9), fp(1, 7), fp(2, 0), fp(3, 1)}, expect: "42/3 [1@7] -[]", answer: 42},
		// The connection fails: the next request is a full fetch that
		// names the old session with epoch 0, closing it.
		{want: []FetchPartition{fp(0, 9)}, expect: "42/4 [] -[1 2 3]", err: cut},
		{want: []FetchPartition{fp(0, 9), fp(2, 0)}, expect: "42/0 [0@9 2@0] -[]", answer: 43},
		{want: []FetchPartition{fp(0, 9), fp(2, 1)}, expect: "43/1 [2@1] -[]", answer: 43},
		// The leader lost the session: a full fetch, naming none.
		{want: []FetchPartition{fp(0, 9), fp(2, 1)}, expect: "43/2 [] -[]", err: lost},
		{want: []FetchPartition{fp(0, 9), fp(2, 1)}, expect: "0/0 [0@9 2@1] -[]", answer: 0},
		// The leader opened no session (its cache is full): full again.
		{want: []FetchPartition{fp(0, 9), fp(2, 1)}, expect: "0/0 [0@9 2@1] -[]", answer: 44},
		// A changed leader epoch is a change.
		{want: []FetchPartition{fp(0, 9), {TopicPartition: TopicPartition{"t", 2}, LeaderEpoch: 4, Offset: 1, MaxBytes: 1 << 20}}, expect: "44/1 [2@1] -[]", answer: 44},
		// An incremental answer of another session: start over.
		{want: []FetchPartition{fp(0, 9)}, expect: "44/2 [] -[2]", answer: 45},
		{want: []FetchPartition{fp(0, 9)}, expect: "44/0 [0@9] -[]", answer: 46},
	}
	s := NewFetchSession()
	for i, st := range steps {
		var req FetchRequest
		s.Next(&req, st.want)
		if got := describe(req); got != st.expect {
			t.Fatalf("step %d: request %s, want %s", i, got, st.expect)
		}
		if st.err != nil {
			s.Failed(st.err)
			continue
		}
		s.Answered(FetchResponse{SessionID: st.answer})
	}
}

// TestFetchSessionHoldsWhatWasAnswered: the session's idea of the leader's
// partitions moves only with an answer, so that a failed request's
// changes are sent again.
func TestFetchSessionHoldsWhatWasAnswered(t *testing.T) {
	s := NewFetchSession()
	var req FetchRequest
	s.Next(&req, []FetchPartition{fp(0, 1), fp(1, 1)})
	s.Answered(FetchResponse{SessionID: 7})
	s.Next(&req, []FetchPartition{fp(0, 2), fp(1, 1)})
	s.Answered(FetchResponse{SessionID: 7})
	held := s.Held()
	if got := held[TopicPartition{"t", 0}].Offset; got != 2 || len(held) != 2 {
		t.Fatalf("held %v after the answer, want partition 0 at 2 and two partitions", held)
	}
	// A request built and never answered changes nothing: Next again
	// after Failed is a full fetch of what is wanted now.
	s.Next(&req, []FetchPartition{fp(0, 3)})
	s.Failed(errors.New("timeout"))
	if len(s.Held()) != 0 {
		t.Fatalf("held %v after a failure, want nothing", s.Held())
	}
	s.Next(&req, []FetchPartition{fp(0, 3)})
	if req.SessionEpoch != 0 || !slices.Equal(req.Partitions, []FetchPartition{fp(0, 3)}) {
		t.Fatalf("after a failure: %s, want a full fetch", describe(req))
	}
}

// TestFetchSessionEpochWraps: after the largest epoch comes 1; 0 would
// open a new session and -1 end it.
func TestFetchSessionEpochWraps(t *testing.T) {
	s := &FetchSession{id: 9, epoch: math.MaxInt32}
	var req FetchRequest
	s.Next(&req, []FetchPartition{fp(0, 1)})
	s.Answered(FetchResponse{SessionID: 9})
	s.Next(&req, []FetchPartition{fp(0, 1)})
	if req.SessionEpoch != 1 {
		t.Fatalf("epoch after MaxInt32: %d, want 1", req.SessionEpoch)
	}
}
