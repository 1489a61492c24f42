package partition

import (
	"context"
	"testing"
	"time"
)

// TestLoadCountsAppendsAndReads: a leader's meter counts what producers
// append, what consumers read and what followers fetch, each apart, and
// knows it leads.
func TestLoadCountsAppendsAndReads(t *testing.T) {
	p := openLeader(t, []int32{1, 2}, []int32{1, 2})
	rec := oneRecord(t)
	res, wait, err := p.Append(rec, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := p.ReplicaRead(2, 0, 0, 1<<20, true)
	if err != nil || len(got.Records) == 0 {
		t.Fatalf("follower fetch: %v, %d bytes", err, len(got.Records))
	}
	// The follower's next fetch moves the HW past the record: consumers
	// see it.
	if _, err := p.ReplicaRead(2, 0, res.LastOffset+1, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	read, err := p.Read(context.Background(), res.BaseOffset, 1<<20, true)
	if err != nil || len(read) == 0 {
		t.Fatalf("consumer read: %v, %d bytes", err, len(read))
	}
	r := p.Load(time.Now().Add(time.Second))
	if !r.Leader || r.BytesIn <= 0 || r.BytesOut <= 0 || r.ReplicaBytesOut <= 0 {
		t.Fatalf("load %+v: want a leader with bytes in, out and out to replicas", r)
	}
	// Over the ~1 s measured, the rates are about the bytes counted.
	for what, c := range map[string][2]float64{
		"in":          {r.BytesIn, float64(len(rec))},
		"out":         {r.BytesOut, float64(len(read))},
		"replica out": {r.ReplicaBytesOut, float64(len(got.Records))},
	} {
		if c[0] < c[1]/2 || c[0] > c[1]*2 {
			t.Errorf("%s: %.0f bytes/s after %v, counted %.0f bytes", what, c[0], r.Age, c[1])
		}
	}
}
