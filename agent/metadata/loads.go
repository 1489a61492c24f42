package metadata

// Load reports (docs/design.md §8): every agent writes what its replicas
// cost it to loads/<agent id>.json, and the holder of the balancer lease
// reads them to place partitions by load (agent/placement.PlaceByLoad).
// A report is a hint, like gossip, not a decision: it is written without
// a condition, read without one, and a missing or stale one only makes
// placement fall back on counts for what it does not know.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// MaxLoadPartitions bounds the replicas one report lists (about 120 bytes
// each, well inside Settings.MaxObjectBytes): a writer with more reports
// its busiest, and a reader refuses a longer list as corrupt.
const MaxLoadPartitions = 20_000

const loadsPrefix = "loads/"

func loadKey(id int32) string { return loadsPrefix + strconv.FormatInt(int64(id), 10) + jsonSuffix }

// AgentLoad is one agent's report of its replicas' load.
type AgentLoad struct {
	AgentID    int32
	WrittenAt  time.Time
	Partitions []PartitionLoad
}

// PartitionLoad is one replica's moving averages (agent/loadstat), in
// bytes per second, and its local log's size.
type PartitionLoad struct {
	TopicID   [16]byte
	Partition int32
	// Leader is whether the replica led when reported, and RoleAge how
	// long it had led or followed: a leader's BytesOut becomes its
	// consumers' only some time after it took over.
	Leader                             bool
	RoleAge                            time.Duration
	BytesIn, BytesOut, ReplicaBytesOut float64
	LocalBytes                         int64
}

type loadObject struct {
	Version    int           `json:"version"`
	AgentID    int32         `json:"agent_id"`
	WrittenAt  time.Time     `json:"written_at"`
	Partitions []loadEntryV1 `json:"partitions"`
}

// loadEntryV1 keeps names short and rates whole: a report may list
// thousands of replicas.
type loadEntryV1 struct {
	TopicID    string `json:"topic_id"`
	Partition  int32  `json:"p"`
	Leader     bool   `json:"leader,omitempty"`
	RoleMillis int64  `json:"role_ms"`
	In         int64  `json:"in"`
	Out        int64  `json:"out"`
	ReplicaOut int64  `json:"replica_out"`
	LocalBytes int64  `json:"local_bytes"`
}

// PutAgentLoad writes l as its agent's report, replacing the last one.
func (s *Store) PutAgentLoad(ctx context.Context, l AgentLoad) error {
	if len(l.Partitions) > MaxLoadPartitions {
		return fmt.Errorf("metadata: load report of agent %d lists %d replicas, more than %d", l.AgentID, len(l.Partitions), MaxLoadPartitions)
	}
	obj := loadObject{Version: objectVersion, AgentID: l.AgentID, WrittenAt: l.WrittenAt.UTC(), Partitions: make([]loadEntryV1, 0, len(l.Partitions))}
	rate := func(v float64) int64 { return int64(math.Round(max(v, 0))) }
	for _, p := range l.Partitions {
		obj.Partitions = append(obj.Partitions, loadEntryV1{TopicID: FormatTopicID(p.TopicID), Partition: p.Partition, Leader: p.Leader,
			RoleMillis: p.RoleAge.Milliseconds(), In: rate(p.BytesIn), Out: rate(p.BytesOut), ReplicaOut: rate(p.ReplicaBytesOut),
			LocalBytes: max(p.LocalBytes, 0)})
	}
	if _, err := s.bucket.Put(ctx, loadKey(l.AgentID), encodeObject(obj), objstore.PutOptions{}); err != nil {
		return fmt.Errorf("write load report of agent %d: %w", l.AgentID, err)
	}
	return nil
}

// AgentLoad reads agent id's last report; ok is false when it has written
// none.
func (s *Store) AgentLoad(ctx context.Context, id int32) (l AgentLoad, ok bool, err error) {
	key := loadKey(id)
	var obj loadObject
	if _, err := s.getObject(ctx, key, &obj); err != nil {
		if objstore.IsNotFound(err) {
			return AgentLoad{}, false, nil
		}
		return AgentLoad{}, false, fmt.Errorf("read load report of agent %d: %w", id, err)
	}
	if obj.AgentID != id {
		return AgentLoad{}, false, &CorruptError{Key: key, Err: fmt.Errorf("agent %d in the report of agent %d", obj.AgentID, id)}
	}
	if len(obj.Partitions) > MaxLoadPartitions {
		return AgentLoad{}, false, &CorruptError{Key: key, Err: fmt.Errorf("%d replicas, more than %d", len(obj.Partitions), MaxLoadPartitions)}
	}
	l = AgentLoad{AgentID: id, WrittenAt: obj.WrittenAt, Partitions: make([]PartitionLoad, 0, len(obj.Partitions))}
	for _, e := range obj.Partitions {
		topicID, err := ParseTopicID(e.TopicID)
		if err == nil && (e.Partition < 0 || e.RoleMillis < 0 || e.In < 0 || e.Out < 0 || e.ReplicaOut < 0 || e.LocalBytes < 0) {
			err = errors.New("negative partition, age, rate or size")
		}
		if err != nil {
			return AgentLoad{}, false, &CorruptError{Key: key, Err: fmt.Errorf("partition %d of topic %q: %w", e.Partition, e.TopicID, err)}
		}
		l.Partitions = append(l.Partitions, PartitionLoad{TopicID: topicID, Partition: e.Partition, Leader: e.Leader,
			RoleAge: time.Duration(e.RoleMillis) * time.Millisecond, BytesIn: float64(e.In), BytesOut: float64(e.Out),
			ReplicaBytesOut: float64(e.ReplicaOut), LocalBytes: e.LocalBytes})
	}
	return l, true, nil
}
