package rebalance

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBalanced(t *testing.T) {
	pp := func(r ...int32) partitionPlacement { return partitionPlacement{leader: r[0], replicas: r, isr: r} }
	tests := []struct {
		name string
		p    placement
		ok   bool
	}{
		{"new agent not live", placement{brokers: []int32{0, 1}, partitions: map[int32]partitionPlacement{0: pp(0, 1)}}, false},
		{"new agent empty", placement{brokers: []int32{0, 1, 2}, partitions: map[int32]partitionPlacement{
			0: pp(0, 1), 1: pp(1, 0), 2: pp(0, 1)}}, false},
		{"one short", placement{brokers: []int32{0, 1, 2}, partitions: map[int32]partitionPlacement{
			0: pp(0, 1), 1: pp(1, 2), 2: pp(0, 1)}}, false},
		{"even", placement{brokers: []int32{0, 1, 2}, partitions: map[int32]partitionPlacement{
			0: pp(0, 1), 1: pp(1, 2), 2: pp(2, 0)}}, true},
		{"leaders uneven", placement{brokers: []int32{0, 1, 2}, partitions: map[int32]partitionPlacement{
			0: pp(0, 1), 1: {leader: 0, replicas: []int32{1, 2}, isr: []int32{1, 2}}, 2: pp(2, 0)}}, false},
		{"moving", placement{brokers: []int32{0, 1, 2}, moving: 1, partitions: map[int32]partitionPlacement{
			0: pp(0, 2), 1: pp(1, 2), 2: pp(0, 1)}}, false},
		{"out of sync", placement{brokers: []int32{0, 1, 2}, partitions: map[int32]partitionPlacement{
			0: {replicas: []int32{0, 2}, isr: []int32{0}}, 1: pp(1, 2), 2: pp(0, 1)}}, false},
	}
	for _, tt := range tests {
		err := tt.p.balanced(2, 2)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errNotBalanced)) {
			t.Errorf("%s: balanced = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestSmoke joins a fourth agent to three holding a small tiered topic and
// checks that it takes replicas and copies less than the history.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four agent processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cfg := DefaultConfig()
	cfg.HistoryBytes = 12 << 20 // two 1 MiB segments per partition, so some is tiered
	cfg.TieringWait = 20 * time.Second
	// Usually 3-6 s; one run in two or three takes a second balancer
	// round, 30-60 s (see benchmarks/README.md).
	cfg.RebalanceTimeout = 100 * time.Second
	res, err := Measure(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Produced != cfg.HistoryBytes {
		t.Errorf("produced %d bytes, want %d", res.Produced, cfg.HistoryBytes)
	}
	if want := cfg.Partitions * cfg.ReplicationFactor / (cfg.Agents + 1); res.Replicas < want {
		t.Errorf("new agent holds %d replicas, want at least %d", res.Replicas, want)
	}
	if res.CopiedBytes <= 0 {
		t.Errorf("copied bytes %d: want some recorded", res.CopiedBytes)
	}
	if res.CopiedBytes >= cfg.HistoryBytes {
		t.Errorf("copied %d bytes of a %d-byte history: the tiered history was copied", res.CopiedBytes, cfg.HistoryBytes)
	}
}
