package metadata

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// objectVersion is the "version" every object is written with and the
// newest one readers accept.
const objectVersion = 1

// FormatVersion is the store layout version recorded in cluster.json. An
// agent refuses a cluster whose format is newer than its own.
const FormatVersion = 1

const (
	clusterKey       = "cluster.json"
	agentsPrefix     = "agents/"
	producerIDsKey   = "producer-ids.json"
	topicsPrefix     = "topics/"
	topicNamesPrefix = "topics/names/"
	jsonSuffix       = ".json"
)

func agentKey(id int32) string { return agentsPrefix + strconv.FormatInt(int64(id), 10) + jsonSuffix }
func nameKey(name string) string {
	return topicNamesPrefix + name + jsonSuffix
}
func topicPrefix(id [16]byte) string       { return topicsPrefix + FormatTopicID(id) + "/" }
func topicKey(id [16]byte) string          { return topicPrefix(id) + "topic.json" }
func stateKey(id [16]byte, p int32) string { return PartitionPrefix(id, p) + "state.json" }

// PartitionPrefix is the store prefix of a partition's objects,
// topics/<id>/<p>/: its state, and the manifest and segments tiering keeps.
func PartitionPrefix(id [16]byte, p int32) string {
	return topicPrefix(id) + strconv.FormatInt(int64(p), 10) + "/"
}

// FormatTopicID writes a topic id as it appears in store keys: 32 lowercase
// hex digits.
func FormatTopicID(id [16]byte) string { return hex.EncodeToString(id[:]) }

// ParseTopicID reads what FormatTopicID writes. It rejects upper case, other
// lengths and the zero id.
func ParseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	if len(s) != 32 || strings.ToLower(s) != s {
		return id, fmt.Errorf("metadata: topic id %q is not 32 lowercase hex digits", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("metadata: topic id %q: %w", s, err)
	}
	if id == ([16]byte{}) {
		return id, fmt.Errorf("metadata: topic id %q is the zero id", s)
	}
	return id, nil
}

// newTopicID returns a random id that is neither zero nor Kafka's reserved
// metadata topic id (0...01), which clients treat specially.
func newTopicID() ([16]byte, error) {
	var id [16]byte
	reserved := [16]byte{15: 1}
	for range 8 { // the odds of a second round are 2^-127; the bound is for form
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("metadata: topic id: %w", err)
		}
		if id != ([16]byte{}) && id != reserved {
			return id, nil
		}
	}
	return id, errors.New("metadata: random source keeps returning reserved topic ids")
}

type clusterObject struct {
	Version       int       `json:"version"`
	ClusterID     string    `json:"cluster_id"`
	FormatVersion int       `json:"format_version"`
	CreatedAt     time.Time `json:"created_at"`
}

type agentObject struct {
	Version      int       `json:"version"`
	ID           int32     `json:"id"`
	KafkaAddr    string    `json:"kafka_addr"`
	HTTPAddr     string    `json:"http_addr"`
	Rack         string    `json:"rack"`
	RegisteredAt time.Time `json:"registered_at"`
}

type producerIDsObject struct {
	Version        int   `json:"version"`
	NextProducerID int64 `json:"next_producer_id"`
}

type nameObject struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	TopicID string `json:"topic_id"`
}

type topicObject struct {
	Version    int               `json:"version"`
	Name       string            `json:"name"`
	TopicID    string            `json:"topic_id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs"`
	CreatedAt  time.Time         `json:"created_at"`
}

type stateObject struct {
	Version     int     `json:"version"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	StateEpoch  int32   `json:"state_epoch"`
	// Target and Adding are a reassignment in progress (omitted when none).
	Target []int32 `json:"target_replicas,omitempty"`
	Adding []int32 `json:"adding_replicas,omitempty"`
	// ReplicationFactor is the replica count to keep (omitted by states
	// written before it was kept).
	ReplicationFactor int32 `json:"replication_factor,omitempty"`
}

// decodeObject checks size and version before decoding data into v. The
// version is read on its own first: a newer version may have a shape this
// struct cannot decode, and the reader deserves a VersionError, not a
// confusing JSON type error.
func decodeObject(key string, data []byte, maxBytes int, v any) error {
	if len(data) > maxBytes {
		return &CorruptError{Key: key, Err: fmt.Errorf("%d bytes exceeds the %d-byte limit", len(data), maxBytes)}
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return &CorruptError{Key: key, Err: err}
	}
	switch {
	case head.Version == nil:
		return &CorruptError{Key: key, Err: errors.New(`no "version" field`)}
	case *head.Version > objectVersion:
		return &VersionError{Key: key, Version: *head.Version, Supported: objectVersion}
	case *head.Version < 1:
		return &CorruptError{Key: key, Err: fmt.Errorf("version %d", *head.Version)}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &CorruptError{Key: key, Err: err}
	}
	return nil
}

func encodeObject(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		// Only our own plain structs are encoded here; failure is a bug.
		panic(fmt.Sprintf("metadata: encode %T: %v", v, err))
	}
	return data
}
