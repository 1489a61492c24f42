package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds on every wait in this package.
const (
	opTimeout      = 30 * time.Second // one admin call, one produce, one consume
	conditionPoll  = 20 * time.Millisecond
	conditionLimit = 20 * time.Second
)

// rec is a client-neutral record: what a test produced or read back.
// Value nil means a null value (a tombstone), distinct from an empty one.
type rec struct {
	Key       []byte
	Value     []byte
	Headers   []hdr
	Timestamp time.Time // zero: not compared
}

type hdr struct{ Key, Value string }

func (r rec) String() string {
	v := "null"
	if r.Value != nil {
		v = fmt.Sprintf("%q", r.Value)
	}
	k := "null"
	if r.Key != nil {
		k = fmt.Sprintf("%q", r.Key)
	}
	return fmt.Sprintf("{key=%s value=%s headers=%v ts=%v}", k, v, r.Headers, r.Timestamp.UnixMilli())
}

// ctxT returns a context that ends after d or when the test ends.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newKgo returns a franz-go client for addr, closed when the test ends.
func newKgo(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, addr))
}

// createTopic creates topic with the given partitions (replication factor 1)
// and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopics(ctxT(t, opTimeout), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func strp(s string) *string { return &s }

// kgoRecord converts a test record for franz-go.
func kgoRecord(topic string, partition int32, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Partition: partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	return kr
}

func fromKgo(kr *kgo.Record, withTimestamp bool) rec {
	r := rec{Key: kr.Key, Value: kr.Value}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, hdr{h.Key, string(h.Value)})
	}
	if withTimestamp {
		r.Timestamp = kr.Timestamp
	}
	return r
}

// consumeKgo reads every record of topic's partitions from the log start to
// the end offsets that ListEndOffsets reports at the time of the call, with
// direct partition consumption (no group). It fails the test on a fetch
// error or if the end is not reached within opTimeout.
func consumeKgo(t testing.TB, addr, topic string) map[int32][]*kgo.Record {
	t.Helper()
	adm := newAdmin(t, addr)
	ends, err := adm.ListEndOffsets(ctxT(t, opTimeout), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctxT(t, opTimeout), topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for p, lo := range ends[topic] {
		offsets[p] = kgo.NewOffset().AtStart()
		if st := starts[topic][p].Offset; lo.Offset > st {
			want[p] = lo.Offset
		}
	}
	out := map[int32][]*kgo.Record{}
	for p := range ends[topic] {
		out[p] = nil
	}
	if len(want) == 0 {
		return out
	}
	cl := newKgo(t, addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx := ctxT(t, opTimeout)
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: not at end offsets %v within %v; got %d records", topic, want, opTimeout, countRecords(out))
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("consume %s[%d]: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

func countRecords(m map[int32][]*kgo.Record) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
}

// sameRecords reports the first difference between want and got, in order,
// or "" if they are equal. Timestamps are compared only where want has one.
func sameRecords(want, got []rec) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if d := diffRecord(want[i], got[i]); d != "" {
			return fmt.Sprintf("record %d: %s\n want %v\n  got %v", i, d, want[i], got[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("got %d records, want %d", len(got), len(want))
	}
	return ""
}

func diffRecord(w, g rec) string {
	var d []string
	if !bytes.Equal(w.Key, g.Key) || (w.Key == nil) != (g.Key == nil) {
		d = append(d, "key")
	}
	if !bytes.Equal(w.Value, g.Value) || (w.Value == nil) != (g.Value == nil) {
		d = append(d, "value")
	}
	if len(w.Headers) != len(g.Headers) {
		d = append(d, "headers")
	} else {
		for i := range w.Headers {
			if w.Headers[i] != g.Headers[i] {
				d = append(d, "headers")
				break
			}
		}
	}
	if !w.Timestamp.IsZero() && w.Timestamp.UnixMilli() != g.Timestamp.UnixMilli() {
		d = append(d, "timestamp")
	}
	return strings.Join(d, ", ")
}

// waitFor polls cond until it returns "" (done) or conditionLimit passes,
// then fails with cond's last message.
func waitFor(t testing.TB, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(conditionLimit)
	ticker := time.NewTicker(conditionPoll)
	defer ticker.Stop()
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, conditionLimit, msg)
		}
		<-ticker.C
	}
}

// testRecords builds n deterministic records for partition p: keys, values
// and headers vary so that an encoding slip shows.
func testRecords(prefix string, p int32, n int, base time.Time) []rec {
	out := make([]rec, 0, n)
	for i := 0; i < n; i++ {
		r := rec{
			Key:       []byte(fmt.Sprintf("%s-key-%d-%d", prefix, p, i)),
			Value:     []byte(fmt.Sprintf("%s-value-%d-%d-%s", prefix, p, i, strings.Repeat("x", i%37))),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		switch i % 5 {
		case 0:
			r.Headers = []hdr{{"h1", fmt.Sprint(i)}, {"h2", "two"}}
		case 1:
			r.Headers = []hdr{{"only", ""}}
		case 2:
			r.Key = nil
		}
		out = append(out, r)
	}
	return out
}

// isKerr reports whether err is the Kafka error with the given code.
func isKerr(err error, code int16) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && ke.Code == code
}
