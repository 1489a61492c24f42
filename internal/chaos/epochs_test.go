package chaos

import (
	"testing"
	"time"
)

func TestEpochRewinds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tpB := TopicPartition{"b", 0}
	s := func(ms, agent int, tp TopicPartition, epoch int32) EpochSample {
		return EpochSample{At: at(ms), Agent: agent, TopicPartition: tp, Epoch: epoch}
	}
	rep := EpochRewinds([]EpochSample{
		s(0, 0, tpA, 3), s(0, 1, tpA, 3), s(0, 0, tpB, 7),
		s(100, 0, tpA, 4), s(100, 1, tpA, 3), // same instant: agent 1 is not behind agent 0 yet
		s(300, 1, tpA, 3), // 200 ms behind agent 0
		s(400, 1, tpA, 4),
		s(500, 2, tpB, 6), // 500 ms behind
		s(600, 2, tpB, 8), s(600, 0, tpB, 7),
	})
	if rep.Samples != 10 || rep.Rewinds != 2 {
		t.Fatalf("%d samples, %d rewinds; want 10 and 2: %+v", rep.Samples, rep.Rewinds, rep)
	}
	want := EpochRewind{TopicPartition: tpB, At: at(500), Agent: 2, Epoch: 6, Highest: 7, HighestAgent: 0, HighestAt: at(0), Behind: 500 * time.Millisecond}
	if rep.Longest != want {
		t.Errorf("longest %+v, want %+v", rep.Longest, want)
	}
	if len(rep.First) != 2 || rep.First[0].TopicPartition != tpA || rep.First[0].Behind != 200*time.Millisecond {
		t.Errorf("first %+v", rep.First)
	}
}
