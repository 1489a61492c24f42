package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// CreateTopic creates a topic with len(assignment) == partitions replica
// lists; each partition starts with leader assignment[p][0], leader epoch 0
// and ISR = replicas. A diskless topic (configs set diskless.enable=true)
// takes no assignment and gets no partition states at all. configs are
// validated and stored as the topic's own configs. The write order that
// keeps a crash from leaving a half-created topic is in the package doc.
func (s *Store) CreateTopic(ctx context.Context, name string, partitions int32, assignment [][]int32, configs map[string]string) (Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	if partitions < 1 || partitions > s.settings.MaxPartitions {
		return Topic{}, fmt.Errorf("%w: topic %q: %d partitions; must be 1 to %d",
			ErrInvalidPartitions, name, partitions, s.settings.MaxPartitions)
	}
	diskless := Diskless(configs)
	if err := s.checkAssignment(name, diskless, assignment, 0, partitions); err != nil {
		return Topic{}, err
	}
	if err := ValidateTopicConfigs(configs); err != nil {
		return Topic{}, fmt.Errorf("topic %q: %w", name, err)
	}

	// Fail fast, before writing anything, when the name is plainly taken.
	if _, err := s.load(ctx, name); err == nil {
		return Topic{}, fmt.Errorf("%w: %q", ErrTopicExists, name)
	} else if !errors.Is(err, ErrUnknownTopic) && !errors.Is(err, errDangling) {
		return Topic{}, err
	}

	id, err := newTopicID()
	if err != nil {
		return Topic{}, err
	}
	t := Topic{Name: name, ID: id, Partitions: partitions, Configs: cloneConfigs(configs), CreatedAt: s.now().UTC()}
	to := topicObject{Version: objectVersion, Name: name, TopicID: FormatTopicID(id), Partitions: partitions,
		Configs: t.Configs, CreatedAt: t.CreatedAt}
	// The id is fresh, so IfAbsent cannot lose to anyone; it only guards
	// against the impossible collision of two random ids.
	if _, err := s.bucket.Put(ctx, topicKey(id), encodeObject(to), objstore.PutOptions{IfAbsent: true}); err != nil {
		return Topic{}, fmt.Errorf("create topic %q: write topic.json: %w", name, err)
	}
	// A diskless topic's assignment is empty: it writes no state.
	if err := s.writeStates(ctx, id, 0, assignment); err != nil {
		s.removeTree(ctx, id)
		return Topic{}, fmt.Errorf("create topic %q: %w", name, err)
	}

	if err := s.commitName(ctx, name, id); err != nil {
		s.removeTree(ctx, id)
		return Topic{}, err
	}
	// CleanOrphans only removes trees older than OrphanGrace, so this can only
	// fail if we stalled that long between writing topic.json and the name.
	// The name is then dangling, which readers treat as absent and a retried
	// create repairs.
	if _, err := s.bucket.Stat(ctx, topicKey(id)); err != nil {
		return Topic{}, fmt.Errorf("create topic %q: topic.json vanished after commit (collected as an orphan?): %w", name, err)
	}
	s.logger.Info("topic created", "topic", name, "topic_id", FormatTopicID(id), "partitions", partitions, "diskless", diskless)
	return t, nil
}

// commitName writes the name object, the commit point of a create: with
// IfAbsent if there is no name, or with If-Match over a dangling name so that
// of two creators repairing it only one wins.
func (s *Store) commitName(ctx context.Context, name string, id [16]byte) error {
	data := encodeObject(nameObject{Version: objectVersion, Name: name, TopicID: FormatTopicID(id)})
	return s.casLoop(ctx, fmt.Sprintf("create topic %q", name), func() (bool, error) {
		opts := objstore.PutOptions{IfAbsent: true}
		l, err := s.load(ctx, name)
		switch {
		case err == nil:
			return false, fmt.Errorf("%w: %q", ErrTopicExists, name)
		case errors.Is(err, errDangling):
			s.logger.Warn("replacing topic name without topic.json", "topic", name)
			opts = objstore.PutOptions{IfMatch: l.nameETag}
		case !errors.Is(err, ErrUnknownTopic):
			return false, err
		}
		_, err = s.bucket.Put(ctx, nameKey(name), data, opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil // someone else moved first; look again
		}
		if err != nil {
			return false, fmt.Errorf("create topic %q: write name: %w", name, err)
		}
		return true, nil
	})
}

// DeleteTopic deletes the name object, after which the topic is gone for
// every reader, and then every object under topics/<id>/ with topic.json
// last. Failures after the name is gone are logged, not returned: the topic
// is deleted, and CleanOrphans removes whatever is left.
//
// Two deletes racing with a create of the same name can delete the newly
// created topic (Bucket has no conditional delete); the result is as if the
// second delete came after the create, and the new topic's objects become
// orphans.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	l, err := s.load(ctx, name)
	if errors.Is(err, errDangling) {
		// Leave the dangling name alone: a concurrent create may be replacing
		// it right now, and it is harmless where it is.
		return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err != nil {
		return err
	}
	if err := s.bucket.Delete(ctx, nameKey(name)); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	s.logger.Info("topic deleted", "topic", name, "topic_id", FormatTopicID(l.topic.ID))
	s.removeTree(ctx, l.topic.ID)
	return nil
}
