package rebalance

// The placement as Metadata and ListPartitionReassignments show it, and
// the pure check of whether it is balanced.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
	"github.com/twmb/franz-go/pkg/kadm"
)

// placement is a topic's replica sets and in-sync sets, the live agents,
// and whether any move is in flight.
type placement struct {
	brokers    []int32
	partitions map[int32]partitionPlacement
	moving     int // partitions ListPartitionReassignments lists as moving
}

type partitionPlacement struct {
	leader        int32
	replicas, isr []int32
}

func readPlacement(ctx context.Context, adm *kadm.Client, topic string) (placement, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return placement{}, err
	}
	td, ok := md.Topics[topic]
	if !ok {
		return placement{}, errors.New("topic not in metadata")
	}
	if td.Err != nil {
		return placement{}, td.Err
	}
	p := placement{partitions: map[int32]partitionPlacement{}}
	for _, b := range md.Brokers {
		p.brokers = append(p.brokers, b.NodeID)
	}
	for _, pd := range td.Partitions {
		if pd.Err != nil {
			return placement{}, fmt.Errorf("partition %d: %w", pd.Partition, pd.Err)
		}
		p.partitions[pd.Partition] = partitionPlacement{leader: pd.Leader, replicas: pd.Replicas, isr: pd.ISR}
	}
	return p, nil
}

// readMoving adds what ListPartitionReassignments says to p.
func readMoving(ctx context.Context, adm *kadm.Client, topic string, p *placement) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	set := kadm.TopicsSet{}
	for id := range p.partitions {
		set.Add(topic, id)
	}
	moves, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return err
	}
	p.moving = 0
	moves.Each(func(r kadm.ListPartitionReassignmentsResponse) {
		if len(r.AddingReplicas)+len(r.RemovingReplicas) > 0 {
			p.moving++
		}
	})
	return nil
}

// inSync is whether every partition has rf replicas, all in sync.
func (p placement) inSync(rf int) bool {
	for _, pp := range p.partitions {
		if len(pp.replicas) != rf || len(pp.isr) != rf {
			return false
		}
	}
	return true
}

// counts is the number of replicas each live agent holds.
func (p placement) counts() map[int32]int {
	c := map[int32]int{}
	for _, b := range p.brokers {
		c[b] = 0
	}
	for _, pp := range p.partitions {
		for _, r := range pp.replicas {
			c[r]++
		}
	}
	return c
}

// balanced is nil once agent newID is live, no move is in flight, every
// partition has rf replicas all in sync, and every agent (newID among
// them) holds its fair share of the replicas and of the leaders: the
// mean rounded down or up,
// so that counts differ by at most one, which is what the balancer's
// placement (agent/placement.Place) aims for. A looser "within one of the
// mean" would accept a pause between two balancer rounds as the end.
func (p placement) balanced(newID int32, rf int) error {
	c := p.counts()
	if _, ok := c[newID]; !ok {
		return fmt.Errorf("%w: agent %d not in metadata", errNotBalanced, newID)
	}
	if p.moving > 0 {
		return fmt.Errorf("%w: %d moves in flight", errNotBalanced, p.moving)
	}
	if !p.inSync(rf) {
		return fmt.Errorf("%w: a partition is not fully in sync", errNotBalanced)
	}
	total := rf * len(p.partitions)
	low, high := total/len(c), (total+len(c)-1)/len(c)
	for id, n := range c {
		if n < low || n > high {
			return fmt.Errorf("%w: agent %d holds %d of %d replicas", errNotBalanced, id, n, total)
		}
	}
	// Leaders too: the new agent takes its share of them, as the
	// preferred replica of the partitions it received.
	leads := map[int32]int{}
	for _, pp := range p.partitions {
		leads[pp.leader]++
	}
	low, high = len(p.partitions)/len(c), (len(p.partitions)+len(c)-1)/len(c)
	for id := range c {
		if n := leads[id]; n < low || n > high {
			return fmt.Errorf("%w: agent %d leads %d of %d partitions", errNotBalanced, id, n, len(p.partitions))
		}
	}
	return nil
}

// Step is what the placement looked like from one moment on, as seen by
// awaitBalanced: it records a step each time one of these changes.
type Step struct {
	At          time.Duration // since the new agent was started
	Live        int           // agents in Metadata
	NewReplicas int           // replicas the new agent holds
	Moving      int           // partitions with a move in flight
	OutOfSync   int           // partitions with a replica outside the ISR
	Err         string        // the read failed
}

func (s Step) String() string {
	if s.Err != "" {
		return fmt.Sprintf("%6.2fs error %s", s.At.Seconds(), s.Err)
	}
	return fmt.Sprintf("%6.2fs live %d, new agent %d replicas, %d moving, %d out of sync",
		s.At.Seconds(), s.Live, s.NewReplicas, s.Moving, s.OutOfSync)
}

// sameStep is whether a and b differ only in when they were seen.
func sameStep(a, b Step) bool {
	a.At, b.At = 0, 0
	return a == b
}

// step summarises p for the trace.
func (p placement) step(newID int32, rf int) Step {
	s := Step{Live: len(p.brokers), NewReplicas: p.counts()[newID], Moving: p.moving}
	for _, pp := range p.partitions {
		if len(pp.isr) < len(pp.replicas) || len(pp.replicas) != rf {
			s.OutOfSync++
		}
	}
	return s
}

// awaitBalanced polls the placement every cfg.PollInterval until it is
// balanced and has stayed so for cfg.Confirm, and returns when it was
// first seen balanced (of the last balanced stretch), how many replicas
// newID then held, and the trace of what changed since start.
func awaitBalanced(ctx context.Context, seed, topic string, newID int32, start time.Time, cfg Config) (time.Time, int, []Step, error) {
	cl, adm, err := loadgen.NewAdmin([]string{seed})
	if err != nil {
		return time.Time{}, 0, nil, err
	}
	defer cl.Close()
	deadline := time.Now().Add(cfg.RebalanceTimeout)
	var since time.Time // zero while not balanced
	var last error
	var trace []Step
	for {
		now := time.Now()
		p, err := readPlacement(ctx, adm, topic)
		if err == nil {
			err = readMoving(ctx, adm, topic, &p)
		}
		var st Step
		if err != nil {
			st = Step{Err: err.Error()}
		} else {
			st = p.step(newID, cfg.ReplicationFactor)
		}
		if n := len(trace); n == 0 || !sameStep(trace[n-1], st) {
			st.At = now.Sub(start)
			trace = append(trace, st)
		}
		if err == nil {
			err = p.balanced(newID, cfg.ReplicationFactor)
		}
		switch {
		case err != nil:
			since, last = time.Time{}, err
		case since.IsZero():
			since = now
		}
		if !since.IsZero() && now.Sub(since) >= cfg.Confirm {
			return since, p.counts()[newID], trace, nil
		}
		if now.After(deadline) {
			return time.Time{}, 0, trace, fmt.Errorf("not balanced within %v: %v; trace:\n%s", cfg.RebalanceTimeout, last, Trace(trace))
		}
		if err := sleep(ctx, cfg.PollInterval); err != nil {
			return time.Time{}, 0, trace, err
		}
	}
}

// Trace formats steps one a line.
func Trace(steps []Step) string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = s.String()
	}
	return strings.Join(lines, "\n")
}
