package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// UpdateTopic applies fn to a copy of the topic and writes the result back
// with If-Match, re-reading and calling fn again (so fn must not have side
// effects it cannot repeat) after losing to a concurrent writer, at most
// Settings.CASRetries times. An error from fn aborts the update and is
// returned as is.
//
// fn may change Configs (validated before the write) but not whether the
// topic is diskless (CheckDisklessUnchanged): a diskless topic has no
// partition states, and a classic one needs them. It may not change Name,
// ID or CreatedAt, and may not change Partitions: growth goes through
// AddPartitions, which also creates the new partitions' state objects.
func (s *Store) UpdateTopic(ctx context.Context, name string, fn func(*Topic) error) (Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	return s.updateTopic(ctx, name, func(t *Topic, l loaded) error {
		before := *t
		if err := fn(t); err != nil {
			return err
		}
		if t.Name != before.Name || t.ID != before.ID || !t.CreatedAt.Equal(before.CreatedAt) {
			return fmt.Errorf("metadata: update of topic %q may not change its name, id or creation time", name)
		}
		if t.Partitions != before.Partitions {
			return fmt.Errorf("%w: topic %q: partition count changes go through AddPartitions", ErrInvalidPartitions, name)
		}
		// l holds the configs as read: fn may have changed t's map in place.
		return CheckDisklessUnchanged(name, l.topic.Configs, t.Configs)
	})
}

// updateTopic is the read + If-Match loop under UpdateTopic and
// AddPartitions. fn sees a private copy of the topic and what was read.
func (s *Store) updateTopic(ctx context.Context, name string, fn func(*Topic, loaded) error) (Topic, error) {
	var out Topic
	err := s.casLoop(ctx, fmt.Sprintf("update topic %q", name), func() (bool, error) {
		l, err := s.load(ctx, name)
		if errors.Is(err, errDangling) {
			return false, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
		}
		if err != nil {
			return false, err
		}
		t := l.topic
		t.Configs = cloneConfigs(l.topic.Configs)
		if err := fn(&t, l); err != nil {
			return false, err
		}
		if err := ValidateTopicConfigs(t.Configs); err != nil {
			return false, fmt.Errorf("topic %q: %w", name, err)
		}
		to := topicObject{Version: objectVersion, Name: t.Name, TopicID: FormatTopicID(t.ID),
			Partitions: t.Partitions, Configs: t.Configs, CreatedAt: t.CreatedAt}
		_, err = s.bucket.Put(ctx, topicKey(t.ID), encodeObject(to), objstore.PutOptions{IfMatch: l.topicETag})
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("update topic %q: %w", name, err)
		}
		out = t
		return true, nil
	})
	return out, err
}

// AddPartitions grows the topic to total partitions. assignment holds the
// replica lists of the new partitions only (len(assignment) == total -
// current), as in Kafka's CreatePartitions. The new state.json objects are
// written first and the topic.json CAS that raises the count commits them
// (see the package doc). A diskless topic takes no assignment and gets no
// states: only its count grows. It returns ErrInvalidPartitions if total
// is not larger than the current count.
//
// Two AddPartitions racing on one topic: one commits, the other fails with
// ErrInvalidPartitions; in a narrow window the winner's new partitions may
// carry the loser's replica lists, which are equally valid placements.
func (s *Store) AddPartitions(ctx context.Context, name string, total int32, assignment [][]int32) (Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	if total < 1 || total > s.settings.MaxPartitions {
		return Topic{}, fmt.Errorf("%w: topic %q: %d partitions; must be 1 to %d",
			ErrInvalidPartitions, name, total, s.settings.MaxPartitions)
	}
	written := int32(-1) // the partition count for which the new states are in place
	return s.updateTopic(ctx, name, func(t *Topic, _ loaded) error {
		current := t.Partitions
		if total <= current {
			return fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger",
				ErrInvalidPartitions, name, current, total)
		}
		if err := s.checkAssignment(name, t.Diskless(), assignment, current, total); err != nil {
			return err
		}
		if written != current {
			if err := s.prepareStates(ctx, t, assignment); err != nil {
				return err
			}
			written = current
		}
		t.Partitions = total
		return nil
	})
}

// prepareStates writes state.json for partitions [t.Partitions, ...),
// replacing leftovers of an uncommitted AddPartitions but never the state of
// a committed partition.
func (s *Store) prepareStates(ctx context.Context, t *Topic, assignment [][]int32) error {
	for i, replicas := range assignment {
		p := t.Partitions + int32(i)
		data := encodeObject(initialState(replicas))
		err := s.casLoop(ctx, fmt.Sprintf("topic %q: write state of partition %d", t.Name, p), func() (bool, error) {
			return s.prepareState(ctx, t, p, data)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// prepareState is one attempt at writing a new partition's state. It
// reports false when a concurrent grower changed the object under it.
func (s *Store) prepareState(ctx context.Context, t *Topic, p int32, data []byte) (bool, error) {
	key := stateKey(t.ID, p)
	_, err := s.bucket.Put(ctx, key, data, objstore.PutOptions{IfAbsent: true})
	if err == nil {
		return true, nil
	}
	if !objstore.IsPreconditionFailed(err) {
		return false, fmt.Errorf("topic %q: write state of partition %d: %w", t.Name, p, err)
	}
	// Something is there. It is a leftover unless the topic has grown past
	// p since we read it.
	attrs, err := s.bucket.Stat(ctx, key)
	if objstore.IsNotFound(err) {
		return false, nil // deleted in between; try to create again
	}
	if err != nil {
		return false, fmt.Errorf("topic %q: stat state of partition %d: %w", t.Name, p, err)
	}
	now, err := s.load(ctx, t.Name)
	if err != nil {
		return false, err
	}
	if now.topic.Partitions > p {
		return false, fmt.Errorf("%w: topic %q grew to %d partitions concurrently",
			ErrInvalidPartitions, t.Name, now.topic.Partitions)
	}
	_, err = s.bucket.Put(ctx, key, data, objstore.PutOptions{IfMatch: attrs.ETag})
	if objstore.IsPreconditionFailed(err) {
		return false, nil // another grower replaced it first; look again
	}
	if err != nil {
		return false, fmt.Errorf("topic %q: replace leftover state of partition %d: %w", t.Name, p, err)
	}
	s.logger.Info("replaced leftover partition state", "topic", t.Name, "partition", p)
	return true, nil
}
