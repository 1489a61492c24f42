package diskless

// The orphan janitor's diskless pass (docs/design.md §7a, The orphan
// janitor): a commit object that no batch coordinator references once it
// is older than --orphan-grace is deleted. Such an object is one whose
// writer died before its commit, or whose commit was refused or timed
// out; --orphan-grace is at least twice --diskless-commit-timeout, and
// coordinators refuse commits of objects cut longer ago than that, so no
// commit can still land on it. Both the object id's time (the writer's
// clock) and the bucket's modification time must be older than the
// grace, which absorbs skew between the two clocks. The pass asks every
// agent that leads a partition of __diskless_state, and deletes nothing
// when one of those partitions has no leader or one agent cannot answer:
// an unknown answer keeps the object.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// janitorBatch is how many object ids one DisklessObjects request names;
// janitorMaxPerPass bounds the candidates one pass considers.
const (
	janitorBatch      = 1000
	janitorMaxPerPass = 100_000
)

// ErrJanitorSkipped: a pass deleted nothing because some coordinator
// could not be asked (a __diskless_state partition without a leader).
var ErrJanitorSkipped = errors.New("diskless: orphan pass skipped: not every batch coordinator can be asked")

// CollectOrphans is one pass: it returns how many objects it deleted.
func (s *Service) CollectOrphans(ctx context.Context, grace time.Duration) (int, error) {
	agents, complete, err := s.host.CoordinatorAgents(ctx)
	if err != nil {
		return 0, err
	}
	if !complete {
		return 0, ErrJanitorSkipped
	}
	cutoff := time.Now().Add(-grace)
	var candidates []sharedobj.ID
	err = s.bucket.List(ctx, sharedobj.KeyPrefix, func(key string, attrs objstore.Attributes) error {
		id, ok := sharedobj.ParseKey(key)
		if !ok || !id.Time().Before(cutoff) || !attrs.LastModified.Before(cutoff) {
			return nil
		}
		candidates = append(candidates, id)
		if len(candidates) == janitorMaxPerPass {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return 0, fmt.Errorf("diskless: list commit objects: %w", err)
	}
	deleted := 0
	for len(candidates) > 0 {
		n := min(len(candidates), janitorBatch)
		d, err := s.collect(ctx, agents, candidates[:n])
		deleted += d
		if err != nil {
			return deleted, err
		}
		candidates = candidates[n:]
	}
	return deleted, nil
}

var errEnough = errors.New("enough candidates for one pass")

// collect deletes those of ids that no coordinator agent references.
func (s *Service) collect(ctx context.Context, agents []Coord, ids []sharedobj.ID) (int, error) {
	req := &disklesswire.ObjectsRequest{IDs: make([][16]byte, len(ids))}
	for i, id := range ids {
		req.IDs[i] = id
	}
	referenced := make([]bool, len(ids))
	for _, co := range agents {
		var got []bool
		err := s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error {
			var err error
			got, err = c.DisklessObjects(ctx, req)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("%w: agent %d: %w", ErrJanitorSkipped, co.Agent, err)
		}
		for i, r := range got {
			referenced[i] = referenced[i] || r
		}
	}
	deleted := 0
	for i, id := range ids {
		if referenced[i] {
			continue
		}
		if err := s.bucket.Delete(ctx, id.Key()); err != nil {
			return deleted, fmt.Errorf("diskless: delete orphan %s: %w", id, err)
		}
		deleted++
		s.orphansDeleted.Inc()
	}
	return deleted, nil
}
