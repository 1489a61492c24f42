package placement

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
)

func TestAssign(t *testing.T) {
	got, err := Assign(4, 2, []int32{10, 11, 12}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{11, 12}, {12, 10}, {10, 11}, {11, 12}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Appending to one list must not clobber the next (shared backing array).
	got[0] = append(got[0], 99)
	if got[1][0] != 12 {
		t.Fatal("replica lists share capacity")
	}

	rng := seededRand(t)
	for range 200 {
		n := 1 + rng.IntN(9)
		agents := rng.Perm(n)
		ids := make([]int32, n)
		for i, a := range agents {
			ids[i] = int32(a * 3)
		}
		rf := int16(1 + rng.IntN(n))
		parts := int32(1 + rng.IntN(50))
		start := rng.IntN(100) - 50
		as, err := Assign(parts, rf, ids, start)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for p, replicas := range as {
			if len(replicas) != int(rf) {
				t.Fatalf("partition %d: %d replicas, want %d", p, len(replicas), rf)
			}
			for i, r := range replicas {
				if !slices.Contains(ids, r) || slices.Contains(replicas[:i], r) {
					t.Fatalf("partition %d replicas %v: not distinct known agents %v", p, replicas, ids)
				}
			}
			leaders[replicas[0]]++
		}
		lo, hi := int(parts), 0
		for _, a := range ids {
			lo, hi = min(lo, leaders[a]), max(hi, leaders[a])
		}
		if hi-lo > 1 {
			t.Fatalf("leaders unbalanced: %v over %v", leaders, ids)
		}
	}

	for _, c := range []struct {
		parts  int32
		rf     int16
		agents []int32
		want   error
	}{
		{1, 3, []int32{0, 1}, metadata.ErrInvalidReplicationFactor},
		{1, 0, []int32{0}, metadata.ErrInvalidReplicationFactor},
		{1, 1, nil, metadata.ErrInvalidReplicationFactor},
		{0, 1, []int32{0}, metadata.ErrInvalidPartitions},
		{maxAssignPartitions + 1, 1, []int32{0}, metadata.ErrInvalidPartitions},
		{1, 1, []int32{0, 0}, metadata.ErrInvalidReplicaAssignment},
		{1, 1, []int32{-1}, metadata.ErrInvalidReplicaAssignment},
	} {
		if _, err := Assign(c.parts, c.rf, c.agents, 0); !errors.Is(err, c.want) {
			t.Errorf("Assign(%d, %d, %v) = %v, want %v", c.parts, c.rf, c.agents, err, c.want)
		}
	}
}

// seededRand is a random source whose seed the test logs, so that a
// failure can be repeated.
func seededRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
