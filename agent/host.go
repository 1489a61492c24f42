package agent

// The agent as its cluster controller (agent/control) sees it: the topic
// table, and the changes to it that the controller asks for.

import (
	"context"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/control"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
)

// hostView implements control.Host.
type hostView struct{ a *Agent }

var _ control.Host = hostView{}

func (h hostView) Partitions() []*partition.Partition { return h.a.localPartitions() }
func (h hostView) Topics() []*kafka.Topic             { return h.a.Topics() }
func (h hostView) Topic(name string) (*kafka.Topic, bool) {
	return h.a.Topic(name)
}
func (h hostView) PlacementAgents() []int32         { return h.a.placementAgents() }
func (h hostView) UploadTiered(ctx context.Context) { h.a.tier.UploadOnce(ctx) }
func (h hostView) StopAgent()                       { h.a.Close() }

// LeaderMovedAway unloads the coordinator of p if it is a partition of
// a coordinators' topic.
func (h hostView) LeaderMovedAway(p *partition.Partition) {
	h.a.coords.Unload(p.Topic(), p.Index())
}

func (h hostView) MoveReplica(k control.Key, st metadata.PartitionState, etag string) {
	h.a.moveReplica(k, st, etag)
}

// Lookup finds a served partition.
func (h hostView) Lookup(k control.Key) (*partition.Partition, *partition.Peer) {
	return h.a.topics.Lookup(k.TopicID, k.Index)
}

// moveReplica (control.Host.MoveReplica) opens this agent's replica of a
// partition it was just given, or closes and removes one it no longer
// holds.
func (a *Agent) moveReplica(k control.Key, st metadata.PartitionState, etag string) {
	a.topics.ChangeReplicas(k.TopicID, func(e *topics.Entry) ([]*partition.Partition, []*partition.Peer, bool) {
		parts, peers := slices.Clone(e.Parts), slices.Clone(e.Peers)
		if slices.Contains(st.Replicas, a.id) {
			i := slices.IndexFunc(peers, func(p *partition.Peer) bool { return p.Index() == k.Index })
			if i < 0 {
				return nil, nil, false // opened meanwhile
			}
			p, err := a.openPartition(e.Meta, e.Snap.Resolved, k.Index, st, etag)
			if err != nil {
				a.logger.Error("open a new replica", "topic", e.Meta.Name, "partition", k.Index, "err", err)
				return nil, nil, false
			}
			if e.Snap.Resolved.RemoteStorage {
				// First: the empty log then starts where the bucket ends,
				// and only the untiered tail is copied from the leader.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := p.OpenTiering(ctx, a.tier)
				cancel()
				if err != nil {
					a.logger.Warn("tiering of a new replica; retried later", "topic", e.Meta.Name, "partition", k.Index, "err", err)
				}
			}
			a.ctl.ApplyState(p, st, etag)
			peers = slices.Delete(peers, i, i+1)
			parts = append(parts, p)
			a.logger.Info("replica added to this agent", "topic", e.Meta.Name, "partition", k.Index, "leader", st.Leader)
			return parts, peers, true
		}
		i := slices.IndexFunc(parts, func(p *partition.Partition) bool { return p.Index() == k.Index })
		if i < 0 {
			return nil, nil, false
		}
		p := parts[i]
		// Moved first: a coordinator write waiting for its acks on p
		// holds the coordinator's lock, which Unload takes, and only a
		// moved (or closed) p ends that wait. The other way round the
		// controller, which runs this, waited for a commit that only its
		// own next state could end.
		p.MovedAway()
		a.coords.Unload(e.Meta.Name, k.Index)
		if err := p.Close(); err != nil {
			a.logger.Warn("close a moved replica", "topic", e.Meta.Name, "partition", k.Index, "err", err)
		}
		a.removeDir(partition.DirName(e.Meta.Name, k.Index), "the replica moved to other agents")
		parts = slices.Delete(parts, i, i+1)
		peers = append(peers, partition.NewPeer(k.Index, st))
		return parts, peers, true
	})
}

// cleanerHost is what the log cleaner (agent/cleaner) sees of the agent.
type cleanerHost struct{ a *Agent }

func (h cleanerHost) Partitions() []*partition.Partition { return h.a.localPartitions() }

func (h cleanerHost) Resolved(topic string) (metadata.Resolved, bool) {
	e, ok := h.a.entry(topic)
	if !ok {
		return metadata.Resolved{}, false
	}
	return e.Snap.Resolved, true
}
