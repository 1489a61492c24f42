package chaos

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Every agent serves every diskless partition, and Metadata gives it the
// leader epoch of the partition's batch coordinator, which "only
// grows" (docs/compatibility.md, "Diskless topics"), so that a client
// that moves to another agent accepts its answer. A client refuses a
// Metadata answer whose epoch is below one it has seen (KIP-320; franz-go
// then keeps the old leader, dead or not, until a later refresh). In
// diskless mode the harness asks every agent for the epochs of the
// workload's partitions every epochSampleInterval; EpochRewinds finds the
// answers below an epoch another answer gave earlier: what such a client
// would have refused. They are reported, not failed.

// epochSampleInterval is how often every agent is asked.
const epochSampleInterval = 200 * time.Millisecond

// maxRewindsListed bounds the rewinds kept for the result.
const maxRewindsListed = 10

// EpochSample is the leader epoch one agent gave for one partition.
type EpochSample struct {
	At    time.Time
	Agent int
	TopicPartition
	Epoch int32
}

// EpochRewind is an answer below the highest epoch given before it.
type EpochRewind struct {
	TopicPartition
	At    time.Time `json:"at"`
	Agent int       `json:"agent"`
	Epoch int32     `json:"epoch"`
	// Highest is the highest epoch answered before At, first by
	// HighestAgent at HighestAt; Behind is At - HighestAt.
	Highest      int32         `json:"highest"`
	HighestAgent int           `json:"highest_agent"`
	HighestAt    time.Time     `json:"highest_at"`
	Behind       time.Duration `json:"behind_ns"`
}

// EpochReport is what EpochRewinds found.
type EpochReport struct {
	Samples int `json:"samples"`
	Rewinds int `json:"rewinds"`
	// Longest is the rewind furthest behind; First lists the first
	// maxRewindsListed.
	Longest EpochRewind   `json:"longest"`
	First   []EpochRewind `json:"first,omitempty"`
}

// EpochRewinds finds, in samples of any order, each answer below the
// highest epoch answered strictly before it for the same partition.
func EpochRewinds(samples []EpochSample) EpochReport {
	rep := EpochReport{Samples: len(samples)}
	sorted := slices.SortedStableFunc(slices.Values(samples), func(a, b EpochSample) int { return a.At.Compare(b.At) })
	type high struct {
		epoch int32
		agent int
		at    time.Time
	}
	highest := map[TopicPartition]high{}
	for i := 0; i < len(sorted); {
		// Answers at the same instant are judged against what came
		// before them, not against each other.
		j := i
		for j < len(sorted) && sorted[j].At.Equal(sorted[i].At) {
			j++
		}
		for _, s := range sorted[i:j] {
			if h, ok := highest[s.TopicPartition]; ok && s.Epoch < h.epoch {
				r := EpochRewind{TopicPartition: s.TopicPartition, At: s.At, Agent: s.Agent, Epoch: s.Epoch,
					Highest: h.epoch, HighestAgent: h.agent, HighestAt: h.at, Behind: s.At.Sub(h.at)}
				rep.Rewinds++
				if len(rep.First) < maxRewindsListed {
					rep.First = append(rep.First, r)
				}
				if r.Behind > rep.Longest.Behind {
					rep.Longest = r
				}
			}
		}
		for _, s := range sorted[i:j] {
			if h, ok := highest[s.TopicPartition]; !ok || s.Epoch > h.epoch {
				highest[s.TopicPartition] = high{s.Epoch, s.Agent, s.At}
			}
		}
		i = j
	}
	slices.SortStableFunc(rep.First, func(a, b EpochRewind) int { return cmp.Compare(a.At.UnixNano(), b.At.UnixNano()) })
	return rep
}

// epochSampler asks every agent for the epochs of topics until stopped.
type epochSampler struct {
	c      *cluster
	topics []string
	stopCh chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	samples []EpochSample
}

func startEpochSampler(c *cluster, topics []string) *epochSampler {
	s := &epochSampler{c: c, topics: topics, stopCh: make(chan struct{})}
	s.wg.Go(s.run)
	return s
}

func (s *epochSampler) run() {
	all := make([]int, len(s.c.agents))
	for i := range all {
		all[i] = i
	}
	tick := time.NewTicker(epochSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-tick.C:
		}
		// One agent at a time, each answer stamped when it arrived.
		for _, i := range all {
			views := s.c.views([]int{i}, s.topics)
			now := time.Now()
			s.mu.Lock()
			for tp, v := range views[i] {
				if v.err == nil && v.epoch >= 0 {
					s.samples = append(s.samples, EpochSample{At: now, Agent: i, TopicPartition: tp, Epoch: v.epoch})
				}
			}
			s.mu.Unlock()
		}
	}
}

// stop ends the sampler and returns its report. It may be called twice.
func (s *epochSampler) stop() EpochReport {
	select {
	case <-s.stopCh:
	default:
		close(s.stopCh)
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return EpochRewinds(s.samples)
}
