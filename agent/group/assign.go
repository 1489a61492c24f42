package group

// Server-side assignors for KIP-848 groups. Both are pure functions of the
// members (sorted by id), their subscriptions and the previous target.
//
//   - uniform spreads every subscribed partition and keeps each where it
//     was unless balance needs it elsewhere. With identical subscriptions
//     members' counts differ by at most one. With different ones it moves
//     a partition only straight from a member to another subscriber of its
//     topic, so a balance that needs a chain of moves through a third
//     member's topic (A to B on X, B to C on Y) is not reached.
//   - range gives each member of a topic a contiguous range of its
//     partitions, members ordered by instance id (else member id), so that
//     members subscribed to co-partitioned topics get the same partition
//     numbers of each. It does not try to be sticky.

import (
	"cmp"
	"slices"
)

type assignMember struct {
	id, instanceID string
	topics         map[[16]byte]bool // subscribed topic ids
	current        partSet           // the previous target
}

func assign(assignor string, members []assignMember, topics []TopicInfo) map[string]partSet {
	if assignor == "range" {
		return assignRange(members, topics)
	}
	return assignUniform(members, topics)
}

func assignRange(members []assignMember, topics []TopicInfo) map[string]partSet {
	out := make(map[string]partSet, len(members))
	for _, m := range members {
		out[m.id] = partSet{}
	}
	order := slices.Clone(members)
	slices.SortStableFunc(order, func(a, b assignMember) int { return cmp.Compare(a.rangeKey(), b.rangeKey()) })
	for _, t := range topics {
		var subs []string
		for _, m := range order {
			if m.topics[t.ID] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		per, extra := int(t.Partitions)/len(subs), int(t.Partitions)%len(subs)
		next := int32(0)
		for i, id := range subs {
			n := per
			if i < extra {
				n++
			}
			for range n {
				out[id][topicPart{t.ID, next}] = struct{}{}
				next++
			}
		}
	}
	return out
}

func (m assignMember) rangeKey() string {
	if m.instanceID != "" {
		return "0" + m.instanceID // static members first, by instance id
	}
	return "1" + m.id
}

func assignUniform(members []assignMember, topics []TopicInfo) map[string]partSet {
	out := make(map[string]partSet, len(members))
	byTopic := map[[16]byte][]string{} // members subscribed to each topic
	for _, m := range members {
		out[m.id] = partSet{}
		for _, t := range topics {
			if m.topics[t.ID] {
				byTopic[t.ID] = append(byTopic[t.ID], m.id)
			}
		}
	}
	// Keep what each member had, if it still subscribes and the partition
	// still exists.
	exists := map[[16]byte]int32{}
	for _, t := range topics {
		exists[t.ID] = t.Partitions
	}
	owner := map[topicPart]string{}
	for _, m := range members {
		for _, tp := range m.current.sorted() {
			if n, ok := exists[tp.topic]; ok && tp.partition < n && m.topics[tp.topic] {
				out[m.id][tp] = struct{}{}
				owner[tp] = m.id
			}
		}
	}
	// leastLoaded is the subscriber of a topic with the fewest partitions
	// (ties: the smallest id, members being sorted).
	leastLoaded := func(topic [16]byte) string {
		best := ""
		for _, id := range byTopic[topic] {
			if best == "" || len(out[id]) < len(out[best]) {
				best = id
			}
		}
		return best
	}
	for _, t := range topics {
		if len(byTopic[t.ID]) == 0 {
			continue
		}
		for p := range t.Partitions {
			tp := topicPart{t.ID, p}
			if _, ok := owner[tp]; !ok {
				id := leastLoaded(t.ID)
				out[id][tp] = struct{}{}
				owner[tp] = id
			}
		}
	}
	// Move partitions from members with at least two more than another
	// subscriber of the same topic. Each move lowers the sum of squared
	// counts, so this ends; the bound is a guard only.
	for moves := 0; moves < 1<<20; moves++ {
		if !moveOne(members, out, leastLoaded) {
			break
		}
	}
	return out
}

// moveOne makes one balancing move, from the most loaded member that can
// give a partition away; it reports whether it found one.
func moveOne(members []assignMember, out map[string]partSet, leastLoaded func([16]byte) string) bool {
	order := make([]string, len(members))
	for i, m := range members {
		order[i] = m.id
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(out[b]), len(out[a])) })
	for _, from := range order {
		for _, tp := range out[from].sorted() {
			to := leastLoaded(tp.topic)
			if len(out[to])+1 < len(out[from]) {
				delete(out[from], tp)
				out[to][tp] = struct{}{}
				return true
			}
		}
	}
	return false
}
