package metadata

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// AgentInfo is an agent's registration. ID and RegisteredAt are filled in by
// the Store; RegisterAgent ignores them.
type AgentInfo struct {
	ID           int32
	KafkaAddr    string
	HTTPAddr     string
	Rack         string
	RegisteredAt time.Time
}

// InitCluster creates cluster.json with a fresh cluster id if there is none
// and returns the cluster's id. Every agent calls it at start; the first one
// wins the create-once write and the rest read its id.
func (s *Store) InitCluster(ctx context.Context) (string, error) {
	for range 2 { // at most: lose the create once, then read the winner
		var obj clusterObject
		_, err := s.getObject(ctx, clusterKey, &obj)
		if err == nil {
			if obj.FormatVersion > FormatVersion {
				return "", fmt.Errorf("%w: cluster format version %d is newer than this agent's %d",
					ErrUnsupportedVersion, obj.FormatVersion, FormatVersion)
			}
			if obj.ClusterID == "" {
				return "", &CorruptError{Key: clusterKey, Err: errors.New("empty cluster_id")}
			}
			return obj.ClusterID, nil
		}
		if !objstore.IsNotFound(err) {
			return "", fmt.Errorf("read %s: %w", clusterKey, err)
		}
		id, err := newClusterID()
		if err != nil {
			return "", err
		}
		obj = clusterObject{Version: objectVersion, ClusterID: id, FormatVersion: FormatVersion, CreatedAt: s.now().UTC()}
		_, err = s.bucket.Put(ctx, clusterKey, encodeObject(obj), objstore.PutOptions{IfAbsent: true})
		if err == nil {
			s.logger.Info("cluster created", "cluster_id", id)
			return id, nil
		}
		if !objstore.IsPreconditionFailed(err) {
			return "", fmt.Errorf("create %s: %w", clusterKey, err)
		}
	}
	return "", fmt.Errorf("%w: %s was created and then vanished", ErrConflict, clusterKey)
}

// newClusterID returns 16 random bytes in unpadded base64url: 22 characters,
// the same shape as the cluster ids Kafka generates.
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("metadata: cluster id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// RegisterAgent claims the lowest agent id that has no agents/<id>.json and
// returns it. Concurrent registrations get distinct ids: each claim is a
// create-once write, and the loser moves on to the next free id.
func (s *Store) RegisterAgent(ctx context.Context, info AgentInfo) (int32, error) {
	taken, err := s.agentIDs(ctx)
	if err != nil {
		return 0, err
	}
	var id int32
	for range s.settings.CASRetries {
		for {
			if _, ok := slices.BinarySearch(taken, id); !ok {
				break
			}
			if id == math.MaxInt32 {
				return 0, errors.New("metadata: no free agent id")
			}
			id++
		}
		obj := agentObject{Version: objectVersion, ID: id, KafkaAddr: info.KafkaAddr, HTTPAddr: info.HTTPAddr,
			Rack: info.Rack, RegisteredAt: s.now().UTC()}
		_, err := s.bucket.Put(ctx, agentKey(id), encodeObject(obj), objstore.PutOptions{IfAbsent: true})
		if err == nil {
			s.logger.Info("agent registered", "agent_id", id, "kafka_addr", info.KafkaAddr, "rack", info.Rack)
			return id, nil
		}
		if !objstore.IsPreconditionFailed(err) {
			return 0, fmt.Errorf("register agent %d: %w", id, err)
		}
		// Someone else claimed id since we listed; remember it and try the next.
		taken = append(taken, id)
		slices.Sort(taken)
	}
	return 0, fmt.Errorf("%w: register agent: gave up after %d attempts: %w",
		ErrConflict, s.settings.CASRetries, objstore.ErrPreconditionFailed)
}

// agentIDs lists the registered ids in ascending order. Keys that do not
// parse as agents/<non-negative int32>.json are skipped with a warning.
func (s *Store) agentIDs(ctx context.Context) ([]int32, error) {
	var ids []int32
	err := s.bucket.List(ctx, agentsPrefix, func(key string, _ objstore.Attributes) error {
		id, ok := parseAgentKey(key)
		if !ok {
			s.logger.Warn("ignoring unexpected object under agents/", "key", key)
			return nil
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

func parseAgentKey(key string) (int32, bool) {
	rest, ok := strings.CutPrefix(key, agentsPrefix)
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, jsonSuffix)
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// Agent returns the registration of id, or ErrUnknownAgent.
func (s *Store) Agent(ctx context.Context, id int32) (AgentInfo, error) {
	var obj agentObject
	key := agentKey(id)
	if _, err := s.getObject(ctx, key, &obj); err != nil {
		if objstore.IsNotFound(err) {
			return AgentInfo{}, fmt.Errorf("%w: %d", ErrUnknownAgent, id)
		}
		return AgentInfo{}, fmt.Errorf("read agent %d: %w", id, err)
	}
	if obj.ID != id {
		return AgentInfo{}, &CorruptError{Key: key, Err: fmt.Errorf("id %d in an object named for %d", obj.ID, id)}
	}
	return AgentInfo{ID: obj.ID, KafkaAddr: obj.KafkaAddr, HTTPAddr: obj.HTTPAddr, Rack: obj.Rack, RegisteredAt: obj.RegisteredAt}, nil
}

// Agents returns every registration in ascending id order.
func (s *Store) Agents(ctx context.Context) ([]AgentInfo, error) {
	ids, err := s.agentIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AgentInfo, 0, len(ids))
	for _, id := range ids {
		a, err := s.Agent(ctx, id)
		if errors.Is(err, ErrUnknownAgent) {
			continue // listed, then gone: registrations are never deleted by us, but tolerate it
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ClaimAgent registers a chosen agent id (--agent-id). An existing
// registration of that id is accepted: agent ids are configuration, as
// Kafka's broker.id, and an operator who names one takes it over, for
// example for an agent rebuilt on a new disk.
func (s *Store) ClaimAgent(ctx context.Context, id int32, info AgentInfo) error {
	if id < 0 {
		return fmt.Errorf("metadata: agent id %d is negative", id)
	}
	obj := agentObject{Version: objectVersion, ID: id, KafkaAddr: info.KafkaAddr, HTTPAddr: info.HTTPAddr,
		Rack: info.Rack, RegisteredAt: s.now().UTC()}
	_, err := s.bucket.Put(ctx, agentKey(id), encodeObject(obj), objstore.PutOptions{IfAbsent: true})
	switch {
	case err == nil:
		s.logger.Info("agent registered", "agent_id", id, "kafka_addr", info.KafkaAddr, "rack", info.Rack)
		return nil
	case objstore.IsPreconditionFailed(err):
		s.logger.Info("agent id already registered; reusing it", "agent_id", id)
		return nil
	}
	return fmt.Errorf("register agent %d: %w", id, err)
}
