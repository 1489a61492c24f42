package chaos

import (
	"testing"
	"time"
)

func TestProduceGaps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tpB := TopicPartition{"b", 0}
	ack := func(tp TopicPartition, value string, ms int) Ack {
		return Ack{TopicPartition: tp, Value: value, At: at(ms)}
	}
	faults := []FaultRecord{
		{Time: at(1000), What: "kill 0"},
		{Time: at(5000), What: "kill 1"},
	}
	for _, tc := range []struct {
		name string
		acks []Ack
		from time.Time
		to   time.Time
		want []ProduceGap
	}{
		{
			name: "the longest gap, and the fault that began in it",
			acks: []Ack{ack(tpA, "p0-1", 0), ack(tpA, "p0-2", 900), ack(tpA, "p0-3", 4000), ack(tpA, "p0-4", 4100), ack(tpA, "p0-5", 9900)},
			from: at(500), to: at(10000),
			want: []ProduceGap{{Producer: "p0",
				Span:      Span{Gap: 5800 * time.Millisecond, From: at(4100), To: at(9900), Fault: 2, FaultAt: "4.5s", FaultWhat: "kill 1"},
				Partition: tpA, PartitionGap: Span{Gap: 5800 * time.Millisecond, From: at(4100), To: at(9900), Fault: 2, FaultAt: "4.5s", FaultWhat: "kill 1"}}},
		},
		{
			name: "a partition waits while the producer does not",
			acks: []Ack{ack(tpA, "p0-1", 0), ack(tpB, "p0-2", 500), ack(tpB, "p0-3", 1500), ack(tpB, "p0-4", 2500), ack(tpA, "p0-5", 3000)},
			from: at(0), to: at(3000),
			want: []ProduceGap{{Producer: "p0",
				Span:      Span{Gap: time.Second, From: at(500), To: at(1500), Fault: 1, FaultAt: "1s", FaultWhat: "kill 0"},
				Partition: tpA, PartitionGap: Span{Gap: 3 * time.Second, From: at(0), To: at(3000), Fault: 1, FaultAt: "1s", FaultWhat: "kill 0"}}},
		},
		{
			name: "gaps wholly before the fault phase do not count; one across its start does, after a fault before it",
			acks: []Ack{ack(tpA, "p0-1", 0), ack(tpA, "p0-2", 3000), ack(tpA, "p0-3", 4000), ack(tpA, "p0-4", 4500)},
			from: at(3500), to: at(4500),
			want: []ProduceGap{{Producer: "p0",
				Span:      Span{Gap: time.Second, From: at(3000), To: at(4000), Fault: 1, FaultAt: "-2.5s", FaultWhat: "kill 0"},
				Partition: tpA, PartitionGap: Span{Gap: time.Second, From: at(3000), To: at(4000), Fault: 1, FaultAt: "-2.5s", FaultWhat: "kill 0"}}},
		},
		{
			name: "a producer never acknowledged again has an open gap to the end; two faults began in it",
			acks: []Ack{ack(tpA, "p0-1", 0), ack(tpA, "p0-2", 200)},
			from: at(0), to: at(8000),
			want: []ProduceGap{{Producer: "p0",
				Span:      Span{Gap: 7800 * time.Millisecond, From: at(200), To: at(8000), Open: true, Fault: 1, FaultAt: "1s", FaultWhat: "kill 0", Later: 1},
				Partition: tpA, PartitionGap: Span{Gap: 7800 * time.Millisecond, From: at(200), To: at(8000), Open: true, Fault: 1, FaultAt: "1s", FaultWhat: "kill 0", Later: 1}}},
		},
		{
			name: "a fault just before the last acknowledgement still caused the gap",
			acks: []Ack{ack(tpA, "p0-1", 1800), ack(tpA, "p0-2", 4500)},
			from: at(0), to: at(4500),
			want: []ProduceGap{{Producer: "p0",
				Span:      Span{Gap: 2700 * time.Millisecond, From: at(1800), To: at(4500), Fault: 1, FaultAt: "1s", FaultWhat: "kill 0"},
				Partition: tpA, PartitionGap: Span{Gap: 2700 * time.Millisecond, From: at(1800), To: at(4500), Fault: 1, FaultAt: "1s", FaultWhat: "kill 0"}}},
		},
		{
			name: "producers apart, named by their values' prefix; no fault before the gap",
			acks: []Ack{ack(tpA, "all-1-1", 0), ack(tpA, "p1-1", 100), ack(tpA, "all-1-2", 300), ack(tpA, "p1-2", 200)},
			from: at(0), to: at(300),
			want: []ProduceGap{
				{Producer: "all-1", Span: Span{Gap: 300 * time.Millisecond, From: at(0), To: at(300)},
					Partition: tpA, PartitionGap: Span{Gap: 300 * time.Millisecond, From: at(0), To: at(300)}},
				{Producer: "p1", Span: Span{Gap: 100 * time.Millisecond, From: at(100), To: at(200)},
					Partition: tpA, PartitionGap: Span{Gap: 100 * time.Millisecond, From: at(100), To: at(200)}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProduceGaps(tc.acks, faults, tc.from, tc.to)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d producers %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("producer %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if g := LongestProduceGap(ProduceGaps([]Ack{ack(tpA, "a-1", 0), ack(tpA, "a-2", 10), ack(tpA, "b-1", 0), ack(tpA, "b-2", 20)}, nil, at(0), at(20))); g.Producer != "b" {
		t.Errorf("longest of a (10 ms) and b (20 ms): %s", g.Producer)
	}
}
