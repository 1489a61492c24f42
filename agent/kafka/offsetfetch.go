package kafka

// OffsetFetch (key 9), versions 1-9.
//
// Versions 8+ ask for several groups at once; each group's answer carries
// its own error. A null topic list asks for every committed offset of the
// group. A partition without a commit answers offset -1, as in Kafka.
// With RequireStable (v7+), a partition whose offset a transaction
// committed (TxnOffsetCommit) and whose marker has not landed yet answers
// UNSTABLE_OFFSET_COMMIT, as in Kafka; without it the last offset
// committed outside a pending transaction is answered. MemberID and MemberEpoch (v9, KIP-848) are not
// checked yet. Version 10 (topic ids) is not served.
//
// Authorization (authorize.go): DESCRIBE on the GROUP (GROUP_AUTHORIZATION_FAILED)
// and DESCRIBE on each topic: a named topic the principal may not describe
// answers TOPIC_AUTHORIZATION_FAILED on its partitions, and is left out of
// an answer for all topics, as in Kafka.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleOffsetFetch(ctx context.Context, s *Server, r *request, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.version < 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = req.Group
		if req.Topics != nil {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				rg.Topics = append(rg.Topics, gt)
			}
		}
		g := s.fetchGroupOffsets(ctx, r, rg, req.RequireStable)
		resp.ErrorCode = g.ErrorCode
		for _, gt := range g.Topics {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = gt.Topic
			for _, gp := range gt.Partitions {
				p := kmsg.NewOffsetFetchResponseTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, s.fetchGroupOffsets(ctx, r, rg, req.RequireStable))
	}
	return resp, nil
}

// fetchGroupOffsets answers one group of an OffsetFetch.
func (s *Server) fetchGroupOffsets(ctx context.Context, r *request, rg kmsg.OffsetFetchRequestGroup, requireStable bool) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = rg.Group
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationDescribe, rg.Group)
	if err != nil {
		g.ErrorCode = errorCode(err)
		return g
	}
	var want []group.TopicPartition
	if rg.Topics != nil {
		want = []group.TopicPartition{}
		for _, t := range rg.Topics {
			for _, p := range t.Partitions {
				want = append(want, group.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	if err := c.CheckOffsetFetch(rg.Group, derefString(rg.MemberID), rg.MemberEpoch); err != nil {
		g.ErrorCode = errorCode(err)
		return g
	}
	got, err := c.FetchOffsets(rg.Group, want)
	if err != nil {
		g.ErrorCode = errorCode(err)
		return g
	}
	var unstable map[group.TopicPartition]bool
	if requireStable {
		unstable = c.PendingTxnOffsets(rg.Group)
	}
	all := want == nil
	if all {
		want = slices.SortedFunc(maps.Keys(got), group.ComparePartitions)
	}
	byTopic := map[string]int{}
	allowed := map[string]bool{}
	for _, tp := range want {
		described, checked := allowed[tp.Topic]
		if !checked {
			described = s.authorizedTopic(r, kmsg.ACLOperationDescribe, tp.Topic)
			allowed[tp.Topic] = described
		}
		if !described && all {
			continue // left out, as Kafka leaves out what may not be described
		}
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(g.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = tp.Topic
			g.Topics = append(g.Topics, t)
		}
		p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = tp.Partition, -1, -1, strptr("")
		if o, found := got[tp]; described && found {
			p.Offset, p.LeaderEpoch, p.Metadata = o.Offset, o.LeaderEpoch, strptr(o.Metadata)
		}
		switch {
		case !described:
			p.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case unstable[tp]:
			p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, strptr("")
			p.ErrorCode = kerr.UnstableOffsetCommit.Code
		}
		g.Topics[i].Partitions = append(g.Topics[i].Partitions, p)
	}
	return g
}
