package console

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// GroupFromLag is a group as kadm's Lag describes it: the same committed
// offsets, ends and lags that `strata group describe` prints.
func GroupFromLag(l kadm.DescribedGroupLag) Group {
	g := Group{Name: l.Group, State: l.State, Protocol: l.ProtocolType, Coordinator: l.Coordinator.NodeID,
		Members: []Member{}, Lag: []GroupPartition{}}
	if l.Protocol != "" {
		g.Protocol += "/" + l.Protocol
	}
	if err := l.Error(); err != nil {
		g.Error = err.Error()
	}
	for _, m := range l.Members {
		g.Members = append(g.Members, Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: AssignedText(m)})
	}
	for _, ml := range l.Lag.Sorted() {
		gp := GroupPartition{Topic: ml.Topic, Partition: ml.Partition, Committed: -1, End: -1, Lag: -1}
		if ml.Commit.At >= 0 && ml.Commit.Topic != "" {
			gp.Committed = ml.Commit.At
		}
		if ml.End.Err == nil {
			gp.End = ml.End.Offset
		}
		if ml.Lag >= 0 {
			gp.Lag = ml.Lag
			g.TotalLag += ml.Lag
		}
		if ml.Member != nil {
			gp.Member = ml.Member.MemberID
		}
		g.Lag = append(g.Lag, gp)
	}
	return g
}

// AssignedText renders a member's assignment as "topic:0,1 other:2" (a
// topic with no partitions as "topic:-"), or "" when it has none or it is
// not a consumer assignment. `strata group describe` prints the same.
func AssignedText(m kadm.DescribedGroupMember) string {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return ""
	}
	var parts []string
	for _, t := range a.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = strconv.Itoa(int(p))
		}
		if len(ids) == 0 {
			ids = []string{"-"}
		}
		parts = append(parts, t.Topic+":"+strings.Join(ids, ","))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
