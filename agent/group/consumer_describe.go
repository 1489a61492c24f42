package group

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerMember is one member as ConsumerGroupDescribe reports it.
type ConsumerMember struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	MemberEpoch                                        int32
	State                                              string // Stable, UnrevokedPartitions, UnreleasedPartitions
	SubscribedTopics                                   []string
	SubscribedRegex                                    string
	Assignment, TargetAssignment                       Assignment
}

// ConsumerDescription is a KIP-848 group (ConsumerGroupDescribe).
type ConsumerDescription struct {
	State                  string
	Epoch, AssignmentEpoch int32
	Assignor               string
	Members                []ConsumerMember
}

// DescribeConsumer describes a KIP-848 group. A group that does not exist
// or uses the classic protocol is ErrGroupNotFound, as in Kafka.
func (c *Coordinator) DescribeConsumer(group string) (ConsumerDescription, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ConsumerDescription{}, ErrClosed
	}
	g := c.groups[group]
	switch {
	case g == nil:
		return ConsumerDescription{}, fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	case g.cg == nil || g.usesClassic():
		return ConsumerDescription{}, fmt.Errorf("%w: group %q is not a consumer group", ErrGroupNotFound, group)
	}
	cg := g.cg
	d := ConsumerDescription{State: cg.state(), Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch, Assignor: cg.assignor}
	if d.Assignor == "" {
		d.Assignor = Assignors[0]
	}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		d.Members = append(d.Members, ConsumerMember{MemberID: id, InstanceID: m.instanceID, RackID: m.rackID,
			ClientID: m.clientID, ClientHost: m.clientHost, MemberEpoch: m.epoch, State: m.state.String(),
			SubscribedTopics: slices.Clone(m.topics), SubscribedRegex: m.regex,
			Assignment: m.assigned.assignment(), TargetAssignment: cg.target[id].assignment()})
	}
	return d, nil
}

// describeConsumerLocked shows a KIP-848 group as DescribeGroups would a
// classic consumer group, so tools that know only DescribeGroups (lag
// reports, older admin clients) show it too.
func (c *Coordinator) describeConsumerLocked(g *groupState) Description {
	cg := g.cg
	d := Description{State: cg.state(), Generation: cg.epoch, ProtocolType: "consumer", Protocol: cg.assignor}
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version = 0
		meta.Topics = slices.Clone(m.topics)
		assigned := kmsg.NewConsumerMemberAssignment()
		assigned.Version = 0
		byName := map[string][]int32{}
		for id, ps := range m.assigned.assignment() {
			if t, ok := c.topics.TopicByID(id); ok {
				byName[t.Name] = ps
			}
		}
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = name, byName[name]
			assigned.Topics = append(assigned.Topics, at)
		}
		d.Members = append(d.Members, GroupMember{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, Metadata: meta.AppendTo(nil), Assignment: assigned.AppendTo(nil)})
	}
	return d
}

// stateName is the group's state as its protocol names it.
func (g *groupState) stateName() string {
	if g.cg != nil && !g.usesClassic() {
		return g.cg.state()
	}
	return g.state.String()
}
