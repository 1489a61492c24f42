package group

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/internal/vfs"
)

// partitionLog is a real partition log on an in-memory file system.
type partitionLog struct{ l *log.Log }

func (p partitionLog) Append(ctx context.Context, raw []byte) error {
	_, err := p.l.Append(raw, 0)
	return err
}
func (p partitionLog) Read(offset int64, maxBytes int) ([]byte, error) {
	return p.l.Read(offset, maxBytes, p.l.FlushedOffset(), true)
}
func (p partitionLog) LogStartOffset() int64 { return p.l.LogStartOffset() }
func (p partitionLog) HighWatermark() int64  { return p.l.FlushedOffset() }

var quiet = slog.New(slog.DiscardHandler)

func openLog(t *testing.T, fs vfs.FS) partitionLog {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 512 // several segments, so replay crosses them
	l, err := log.Open("/offsets-0", cfg, log.Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return partitionLog{l}
}

func commit(t *testing.T, c *Coordinator, group string, offsets map[TopicPartition]int64) {
	t.Helper()
	r := Commit{Group: group, Generation: -1, Offsets: map[TopicPartition]Offset{}}
	for tp, o := range offsets {
		r.Offsets[tp] = Offset{Offset: o, LeaderEpoch: 3, Metadata: "m"}
	}
	if err := c.CommitOffsets(context.Background(), r); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func TestCommitFetchReplay(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs)
	c, err := Load(context.Background(), 0, l, DefaultConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	a0, a1, b0 := TopicPartition{"a", 0}, TopicPartition{"a", 1}, TopicPartition{"b", 0}
	for i := range 20 { // enough records to span several 512-byte segments
		commit(t, c, "g1", map[TopicPartition]int64{a0: int64(i), a1: int64(100 + i)})
	}
	commit(t, c, "g2", map[TopicPartition]int64{b0: 7})
	if err := c.DeleteOffsets(context.Background(), "g1", []TopicPartition{a1}); err != nil {
		t.Fatal(err)
	}
	commit(t, c, "g3", map[TopicPartition]int64{b0: 9})
	if err := c.DeleteGroup(context.Background(), "g3"); err != nil {
		t.Fatal(err)
	}
	check := func(c *Coordinator) {
		t.Helper()
		got, _ := c.FetchOffsets("g1", nil)
		if len(got) != 1 || got[a0].Offset != 19 || got[a0].LeaderEpoch != 3 || got[a0].Metadata != "m" {
			t.Errorf("g1 offsets %+v, want only a-0 at 19 (epoch 3, metadata m)", got)
		}
		got, _ = c.FetchOffsets("g2", []TopicPartition{b0, a0})
		if len(got) != 1 || got[b0].Offset != 7 {
			t.Errorf("g2 offsets %+v, want b-0 at 7", got)
		}
		if gs := c.Groups(); len(gs) != 2 || gs[0] != "g1" || gs[1] != "g2" {
			t.Errorf("groups %v, want [g1 g2]", gs)
		}
	}
	check(c)
	// A new coordinator over the same log (a restart, or another agent
	// taking the partition over) sees exactly the same state.
	replayed, err := Load(context.Background(), 0, l, DefaultConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	check(replayed)
}

func TestCommitRules(t *testing.T) {
	c, err := Load(context.Background(), 0, openLog(t, vfs.NewMem()), DefaultConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"t", 0}
	err = c.CommitOffsets(context.Background(), Commit{Group: "g", Generation: 2, Offsets: map[TopicPartition]Offset{tp: {Offset: 1}}})
	if !errors.Is(err, ErrIllegalGeneration) {
		t.Errorf("commit with a generation the group never had: %v, want ErrIllegalGeneration", err)
	}
	err = c.CommitOffsets(context.Background(), Commit{Group: "g", Generation: 2, GroupMustExist: true, Offsets: map[TopicPartition]Offset{tp: {Offset: 1}}})
	if !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("commit (v9) with a generation to a group that does not exist: %v, want ErrGroupNotFound", err)
	}
	if err := c.CommitOffsets(context.Background(), Commit{Generation: -1}); !errors.Is(err, ErrInvalidGroupID) {
		t.Errorf("empty group id: %v", err)
	}
	if err := c.DeleteGroup(context.Background(), "nobody"); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("delete unknown group: %v", err)
	}
	c.Close()
	if err := c.CommitOffsets(context.Background(), Commit{Group: "g", Generation: -1, Offsets: map[TopicPartition]Offset{tp: {}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("commit after Close: %v", err)
	}
}

func TestExpireOffsets(t *testing.T) {
	l := openLog(t, vfs.NewMem())
	cfg := DefaultConfig()
	cfg.OffsetsRetention = time.Hour
	c, err := Load(context.Background(), 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.now = func() time.Time { return now.Add(-2 * time.Hour) }
	commit(t, c, "old", map[TopicPartition]int64{{"t", 0}: 1})
	c.now = func() time.Time { return now }
	commit(t, c, "new", map[TopicPartition]int64{{"t", 0}: 2})
	if n, err := c.ExpireOffsets(context.Background()); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v; want 1 offset", n, err)
	}
	replayed, err := Load(context.Background(), 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if gs := replayed.Groups(); len(gs) != 1 || gs[0] != "new" {
		t.Errorf("groups after expiry and replay: %v, want [new]", gs)
	}
}

// TestPartition pins the group-to-partition hash to Java's String.hashCode,
// which Kafka uses: values computed with Java.
func TestPartition(t *testing.T) {
	tests := []struct {
		group string
		n     int32
		want  int32
	}{
		{"abc", 50, 96354 % 50},           // "abc".hashCode() = 96354
		{"hello", 50, 99162322 % 50},      // 99162322
		{"polygenelubricants", 50, 0},     // hashCode() = Integer.MIN_VALUE; abs -> 0
		{"my-group", 50, 1906497762 % 50}, // hashCode() = -1906497762
		{"😀", 7, 1772899 % 7},             // UTF-16 surrogate pair D83D DE00
	}
	for _, tc := range tests {
		if got := Partition(tc.group, tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
}
