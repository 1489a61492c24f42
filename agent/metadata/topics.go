package metadata

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Topic is a topic's topic.json. Configs holds only the configs set on the
// topic itself (Kafka's DYNAMIC_TOPIC_CONFIG); Resolve adds the defaults. It
// is never nil when returned by the Store.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
	Configs    map[string]string
	CreatedAt  time.Time
}

// errDangling marks a name object whose topic.json is missing. It never
// leaves the package: readers turn it into ErrUnknownTopic.
var errDangling = errors.New("metadata: topic name without topic.json")

// loaded is a topic as read from the store, with what a CAS needs.
type loaded struct {
	topic     Topic
	nameETag  string
	topicETag string
}

// load reads a topic by name. It returns ErrUnknownTopic if the name object
// is missing, and errDangling (with nameETag set) if topic.json is.
func (s *Store) load(ctx context.Context, name string) (loaded, error) {
	var l loaded
	nk := nameKey(name)
	var no nameObject
	etag, err := s.getObject(ctx, nk, &no)
	if objstore.IsNotFound(err) {
		return l, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err != nil {
		return l, fmt.Errorf("read topic %q: %w", name, err)
	}
	l.nameETag = etag
	if no.Name != name {
		return l, &CorruptError{Key: nk, Err: fmt.Errorf("name %q in the object for %q", no.Name, name)}
	}
	id, err := ParseTopicID(no.TopicID)
	if err != nil {
		return l, &CorruptError{Key: nk, Err: err}
	}
	tk := topicKey(id)
	var to topicObject
	l.topicETag, err = s.getObject(ctx, tk, &to)
	if objstore.IsNotFound(err) {
		return l, fmt.Errorf("%w: %q names topic id %s", errDangling, name, no.TopicID)
	}
	if err != nil {
		return l, fmt.Errorf("read topic %q: %w", name, err)
	}
	if to.Name != name || to.TopicID != no.TopicID {
		return l, &CorruptError{Key: tk, Err: fmt.Errorf("holds %q/%s, expected %q/%s", to.Name, to.TopicID, name, no.TopicID)}
	}
	if to.Partitions < 1 || to.Partitions > s.settings.MaxPartitions {
		return l, &CorruptError{Key: tk, Err: fmt.Errorf("partitions %d outside [1, %d]", to.Partitions, s.settings.MaxPartitions)}
	}
	l.topic = Topic{Name: name, ID: id, Partitions: to.Partitions, Configs: to.Configs, CreatedAt: to.CreatedAt}
	if l.topic.Configs == nil {
		l.topic.Configs = map[string]string{}
	}
	return l, nil
}

// Topic returns the named topic, or ErrUnknownTopic (also for a name whose
// topic.json is missing; see the package doc).
func (s *Store) Topic(ctx context.Context, name string) (Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	l, err := s.load(ctx, name)
	if errors.Is(err, errDangling) {
		return Topic{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return l.topic, err
}

// Topics lists topics/names/ and reads every topic, sorted by name. Names
// whose topic.json is missing and topics deleted during the listing are left
// out. So is a topic whose objects cannot be decoded (corrupt, or written by
// a newer version): it is logged at error level rather than failing the whole
// listing, since one bad object must not hide every other topic.
func (s *Store) Topics(ctx context.Context) ([]Topic, error) {
	var names []string
	err := s.bucket.List(ctx, topicNamesPrefix, func(key string, _ objstore.Attributes) error {
		name, ok := strings.CutSuffix(strings.TrimPrefix(key, topicNamesPrefix), jsonSuffix)
		if !ok || ValidateTopicName(name) != nil {
			s.logger.Warn("ignoring unexpected object under topics/names/", "key", key)
			return nil
		}
		names = append(names, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var (
		mu     sync.Mutex
		topics = make([]Topic, 0, len(names))
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.settings.Concurrency)
	for _, name := range names {
		g.Go(func() error {
			l, err := s.load(gctx, name)
			switch {
			case err == nil:
				mu.Lock()
				topics = append(topics, l.topic)
				mu.Unlock()
			case errors.Is(err, ErrUnknownTopic):
			case errors.Is(err, errDangling):
				s.logger.Warn("topic name without topic.json; treating the topic as absent", "topic", name)
			case errors.Is(err, ErrCorrupt), errors.Is(err, ErrUnsupportedVersion):
				s.logger.Error("skipping unreadable topic", "topic", name, "err", err)
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(topics, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return topics, nil
}

// checkAssignment checks the replica lists of partitions [first, total)
// of topic name: one valid list per partition, or, for a diskless topic,
// none at all.
func (s *Store) checkAssignment(name string, diskless bool, assignment [][]int32, first, total int32) error {
	switch {
	case diskless && len(assignment) > 0:
		return fmt.Errorf("%w: topic %q is diskless: its partitions have no replicas, so it takes no replica assignment",
			ErrInvalidReplicaAssignment, name)
	case diskless:
		return nil
	case int64(len(assignment)) != int64(total-first):
		return fmt.Errorf("%w: topic %q: %d replica lists for %d new partitions",
			ErrInvalidReplicaAssignment, name, len(assignment), total-first)
	}
	if err := s.validateAssignment(assignment, first); err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	return nil
}

// validateAssignment checks a replica assignment for partitions
// [first, first+len(assignment)).
func (s *Store) validateAssignment(assignment [][]int32, first int32) error {
	for i, replicas := range assignment {
		p := first + int32(i)
		if len(replicas) == 0 || len(replicas) > s.settings.MaxReplicas {
			return fmt.Errorf("%w: partition %d has %d replicas; must be 1 to %d",
				ErrInvalidReplicaAssignment, p, len(replicas), s.settings.MaxReplicas)
		}
		for j, r := range replicas {
			if r < 0 {
				return fmt.Errorf("%w: partition %d: negative agent id %d", ErrInvalidReplicaAssignment, p, r)
			}
			if slices.Contains(replicas[:j], r) {
				return fmt.Errorf("%w: partition %d: agent %d listed twice", ErrInvalidReplicaAssignment, p, r)
			}
		}
	}
	return nil
}

// initialState is a new partition's state: the first replica leads at epoch
// 0 and every replica is in sync (there is no data yet to lag behind on).
func initialState(replicas []int32) stateObject {
	return stateObject{
		Version:  objectVersion,
		Leader:   replicas[0],
		Replicas: slices.Clone(replicas),
		ISR:      slices.Clone(replicas),
		// The topic's replication factor, which the balancer restores.
		ReplicationFactor: int32(len(replicas)),
	}
}

// writeStates creates state.json for partitions [first, first+len(assignment))
// of a topic id nobody else knows yet, in parallel.
func (s *Store) writeStates(ctx context.Context, id [16]byte, first int32, assignment [][]int32) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.settings.Concurrency)
	for i, replicas := range assignment {
		p := first + int32(i)
		g.Go(func() error {
			opts := objstore.PutOptions{IfAbsent: true}
			if _, err := s.bucket.Put(gctx, stateKey(id, p), encodeObject(initialState(replicas)), opts); err != nil {
				return fmt.Errorf("write state of partition %d: %w", p, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// cloneConfigs copies configs so the caller's map is never shared with a
// returned Topic; it returns a non-nil map.
func cloneConfigs(configs map[string]string) map[string]string {
	out := make(map[string]string, len(configs))
	maps.Copy(out, configs)
	return out
}

// TopicIDExists reports whether topics/<id>/topic.json exists, readable or
// not. The agent asks before deleting a local partition directory that no
// listed topic owns: Topics skips topics it cannot read (corrupt, or written
// by a newer version), and their data must not be taken for garbage.
func (s *Store) TopicIDExists(ctx context.Context, id [16]byte) (bool, error) {
	_, err := s.bucket.Stat(ctx, topicKey(id))
	if objstore.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
