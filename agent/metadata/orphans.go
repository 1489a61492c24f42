package metadata

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// removeTree deletes every object under topics/<id>/, topic.json last, so
// that a tree being removed stays recognisable as a topic to the end. Errors
// are logged: an unnamed tree is an orphan that CleanOrphans finishes.
func (s *Store) removeTree(ctx context.Context, id [16]byte) {
	if err := s.deleteTree(ctx, id); err != nil {
		s.logger.Warn("topic objects left behind for orphan cleanup", "topic_id", FormatTopicID(id), "err", err)
	}
}

func (s *Store) deleteTree(ctx context.Context, id [16]byte) error {
	prefix, last := topicPrefix(id), topicKey(id)
	var keys []string
	if err := s.bucket.List(ctx, prefix, func(key string, _ objstore.Attributes) error {
		if key != last {
			keys = append(keys, key)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.settings.Concurrency)
	for _, key := range keys {
		g.Go(func() error { return s.bucket.Delete(gctx, key) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.bucket.Delete(ctx, last)
}

// CleanOrphans deletes topics/<id>/ trees that no name object points to and
// whose newest object is older than Settings.OrphanGrace: the remains of
// creates that crashed before committing and of deletes that crashed part
// way. The grace period keeps it away from creates still in progress and from
// late uploads of a just-deleted topic. It returns how many trees it
// removed. Run it from one agent at a time (for instance the balancer); two
// concurrent runs are safe but do the same work twice.
func (s *Store) CleanOrphans(ctx context.Context) (int, error) {
	// Names first, trees second: a create writes its tree before its name,
	// so a tree that is named only after our name listing is one whose create
	// was still running, and its objects are newer than the grace period
	// unless that create stalled for longer (see CreateTopic).
	//
	// Keys are collected before reading: a backend may hold a lock while
	// List runs its callback.
	var nameKeys []string
	if err := s.bucket.List(ctx, topicNamesPrefix, func(key string, _ objstore.Attributes) error {
		nameKeys = append(nameKeys, key)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("clean orphans: %w", err)
	}
	named := map[[16]byte]bool{}
	for _, key := range nameKeys {
		var no nameObject
		if _, err := s.getObject(ctx, key, &no); err != nil {
			if objstore.IsNotFound(err) {
				continue
			}
			// An unreadable name might point anywhere: collecting now could
			// delete a live topic, so stop.
			return 0, fmt.Errorf("clean orphans: read %s: %w", key, err)
		}
		if id, err := ParseTopicID(no.TopicID); err == nil {
			named[id] = true
		}
	}

	newest := map[[16]byte]time.Time{}
	err := s.bucket.List(ctx, topicsPrefix, func(key string, attrs objstore.Attributes) error {
		rest := strings.TrimPrefix(key, topicsPrefix)
		idText, _, ok := strings.Cut(rest, "/")
		if !ok {
			return nil
		}
		id, err := ParseTopicID(idText)
		if err != nil || named[id] {
			return nil // topics/names/ and anything foreign are not ours to judge
		}
		if attrs.LastModified.After(newest[id]) {
			newest[id] = attrs.LastModified
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("clean orphans: %w", err)
	}

	cutoff := s.now().Add(-s.settings.OrphanGrace)
	removed := 0
	for id, t := range newest {
		if t.After(cutoff) {
			continue
		}
		if err := s.deleteTree(ctx, id); err != nil {
			return removed, fmt.Errorf("clean orphans: topic id %s: %w", FormatTopicID(id), err)
		}
		s.logger.Info("orphan topic objects deleted", "topic_id", FormatTopicID(id), "newest", t)
		removed++
	}
	return removed, nil
}
