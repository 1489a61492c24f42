package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scriptedSource returns one scripted poll per call. When the script runs
// out it cancels the test's context (if given) and returns an empty poll, so
// a loop that should have stopped shows up as extra polls, not a hang.
type scriptedSource struct {
	polls  []kgo.Fetches
	calls  int
	cancel context.CancelFunc
}

var _ fetchSource = (*scriptedSource)(nil)

func (s *scriptedSource) PollFetches(context.Context) kgo.Fetches {
	s.calls++
	if s.calls <= len(s.polls) {
		return s.polls[s.calls-1]
	}
	if s.cancel != nil {
		s.cancel()
	}
	return kgo.NewErrFetch(context.Canceled)
}

func poll(topic string, parts map[int32][]*kgo.Record) kgo.Fetches {
	ft := kgo.FetchTopic{Topic: topic}
	for p, recs := range parts {
		for _, r := range recs {
			r.Topic, r.Partition = topic, p
		}
		ft.Partitions = append(ft.Partitions, kgo.FetchPartition{Partition: p, Records: recs})
	}
	return kgo.Fetches{{Topics: []kgo.FetchTopic{ft}}}
}

func recs(offsets ...int64) []*kgo.Record {
	var out []*kgo.Record
	for _, o := range offsets {
		out = append(out, &kgo.Record{Offset: o, Value: []byte{byte('a' + o%26)}})
	}
	return out
}

func TestConsumeLoop(t *testing.T) {
	// kgo.RecordAttrs cannot be built with the control bit set outside
	// franz-go, so skipping markers is left to the end-to-end tests; the
	// end-offset bookkeeping that markers rely on is covered here.
	fmtV, _ := parseFormat(`%p:%o\n`)
	tests := []struct {
		name      string
		plans     []partitionPlan
		polls     []kgo.Fetches
		count     int64
		follow    bool
		want      string
		wantPolls int
	}{
		{
			name:  "nothing to read polls nothing",
			plans: []partitionPlan{{0, 5, 5}, {1, 0, 0}},
			want:  "", wantPolls: 0,
		},
		{
			name:  "stops when every partition reached its end",
			plans: []partitionPlan{{0, 0, 3}, {1, 10, 12}},
			polls: []kgo.Fetches{
				poll("t", map[int32][]*kgo.Record{0: recs(0, 1)}),
				poll("t", map[int32][]*kgo.Record{1: recs(10, 11)}),
				poll("t", map[int32][]*kgo.Record{0: recs(2)}),
			},
			want: "0:0\n0:1\n1:10\n1:11\n0:2\n", wantPolls: 3,
		},
		{
			name:  "records at or past the end are not printed",
			plans: []partitionPlan{{0, 0, 2}, {1, 0, 2}},
			polls: []kgo.Fetches{
				poll("t", map[int32][]*kgo.Record{0: recs(0, 1, 2, 3)}),
				// partition 1's position jumped past its end (e.g. a
				// compacted or transactional gap): it is finished too.
				poll("t", map[int32][]*kgo.Record{0: recs(4), 1: recs(5)}),
			},
			want: "0:0\n0:1\n", wantPolls: 2,
		},
		{
			name:  "count stops early",
			plans: []partitionPlan{{0, 0, 100}},
			polls: []kgo.Fetches{poll("t", map[int32][]*kgo.Record{0: recs(0, 1, 2, 3)})},
			count: 3, want: "0:0\n0:1\n0:2\n", wantPolls: 1,
		},
		{
			name:   "follow goes past the end until the context ends",
			plans:  []partitionPlan{{0, 0, 1}},
			follow: true,
			polls: []kgo.Fetches{
				poll("t", map[int32][]*kgo.Record{0: recs(0)}),
				poll("t", map[int32][]*kgo.Record{0: recs(1, 2)}),
			},
			want: "0:0\n0:1\n0:2\n", wantPolls: 3,
		},
		{
			name:   "follow with count",
			plans:  []partitionPlan{{0, 7, 7}},
			follow: true, count: 2,
			polls: []kgo.Fetches{poll("t", map[int32][]*kgo.Record{0: recs(7, 8, 9)})},
			want:  "0:7\n0:8\n", wantPolls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			src := &scriptedSource{polls: tc.polls, cancel: cancel}
			if !tc.follow {
				src.cancel = nil
			}
			var out bytes.Buffer
			n, err := consumeLoop(ctx, src, &out, "t", tc.plans, fmtV, tc.count, tc.follow)
			if err != nil {
				t.Fatalf("consumeLoop: %v", err)
			}
			if out.String() != tc.want {
				t.Errorf("output %q, want %q", out.String(), tc.want)
			}
			if int(n) != bytes.Count(out.Bytes(), []byte("\n")) {
				t.Errorf("returned count %d does not match output", n)
			}
			if src.calls != tc.wantPolls {
				t.Errorf("%d polls, want %d", src.calls, tc.wantPolls)
			}
		})
	}
}

func TestConsumeLoopFetchError(t *testing.T) {
	ft := kgo.FetchTopic{Topic: "t", Partitions: []kgo.FetchPartition{
		{Partition: 0, Records: recs(0)},
		{Partition: 1, Err: kerr.TopicAuthorizationFailed},
	}}
	src := &scriptedSource{polls: []kgo.Fetches{{{Topics: []kgo.FetchTopic{ft}}}}}
	var out bytes.Buffer
	_, err := consumeLoop(context.Background(), src, &out, "t", []partitionPlan{{0, 0, 5}, {1, 0, 5}}, recordFormat{}, 0, false)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("error = %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := err.Error(); got != "consume t/1: TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]" {
		t.Errorf("message %q", got)
	}
}

func TestConsumeLoopCanceledIsNotAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := &scriptedSource{}
	n, err := consumeLoop(ctx, src, &bytes.Buffer{}, "t", []partitionPlan{{0, 0, 5}}, recordFormat{}, 0, false)
	if err != nil || n != 0 || src.calls != 1 {
		t.Errorf("got n=%d err=%v calls=%d; want 0, nil, 1", n, err, src.calls)
	}
}

func TestMakePlans(t *testing.T) {
	lo := func(p int32, off int64, err error) kadm.ListedOffset {
		return kadm.ListedOffset{Topic: "t", Partition: p, Offset: off, Err: err}
	}
	starts := kadm.ListedOffsets{"t": {0: lo(0, 10, nil), 1: lo(1, 0, nil)}}
	ends := kadm.ListedOffsets{"t": {0: lo(0, 20, nil), 1: lo(1, 0, nil)}}
	atTime := kadm.ListedOffsets{"t": {0: lo(0, 15, nil), 1: lo(1, -1, nil)}}

	got, err := makePlans("t", []int32{0, 1}, offsetSpec{kind: offsetTime}, starts, ends, atTime)
	if err != nil {
		t.Fatal(err)
	}
	want := []partitionPlan{{0, 15, 20}, {1, 0, 0}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("plans %+v, want %+v", got, want)
	}
	if got, _ := makePlans("t", []int32{0}, offsetSpec{kind: offsetLatest}, starts, ends, nil); got[0] != (partitionPlan{0, 20, 20}) {
		t.Errorf("latest: %+v", got)
	}

	bad := kadm.ListedOffsets{"t": {0: lo(0, -1, kerr.NotLeaderForPartition)}}
	if _, err := makePlans("t", []int32{0}, offsetSpec{}, bad, ends, nil); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Errorf("offset error: got %v", err)
	}
	if _, err := makePlans("t", []int32{2}, offsetSpec{}, starts, ends, nil); err == nil {
		t.Error("a partition missing from the answer must be an error")
	}
}
