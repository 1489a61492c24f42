package diskless

// The index follower: for every coordinator agent whose diskless
// partitions are read here, one goroutine keeps a long-polled
// DisklessIndex request open for all the partitions read within
// followIdle, each at the high watermark this agent knows. An answer
// brings the new offsets, and the Fetch long polls on this agent wake
// (Host.DataChanged), as a follower's fetch loop follows its leader
// (docs/design.md §6). A goroutine ends when none of its partitions is
// read any more, or when they moved to another coordinator agent.

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/peer"
)

// followerRetryPause is the pause after a failed index request.
const followerRetryPause = 500 * time.Millisecond

// follower is the goroutine following one coordinator agent.
type follower struct {
	agent int32
	// grew is signalled (never blocking) when a partition joins, so the
	// poll under way is cut short and the next one includes it.
	grew chan struct{}
}

// touch records that a reader asked for k, whose coordinator is known,
// and makes sure its coordinator agent is followed.
func (s *Service) touch(k batchcoord.PartitionKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[k]
	if !ok || v.coord.Addr == "" || s.closed {
		return
	}
	joined := time.Since(v.readAt) > followIdle
	v.readAt = time.Now()
	f, ok := s.follows[v.coord.Agent]
	if !ok {
		f = &follower{agent: v.coord.Agent, grew: make(chan struct{}, 1)}
		s.follows[f.agent] = f
		s.wg.Go(func() { s.runFollower(f) })
		return
	}
	if joined {
		select {
		case f.grew <- struct{}{}:
		default:
		}
	}
}

// followed returns the partitions f polls, and where: nil when none is
// read any more (f is then removed, under the same lock).
func (s *Service) followed(f *follower) (Coord, []batchcoord.PartitionKey, []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var co Coord
	var keys []batchcoord.PartitionKey
	var ends []int64
	for k, v := range s.views {
		if v.coord.Agent == f.agent && time.Since(v.readAt) <= followIdle {
			co = v.coord
			keys = append(keys, k)
			ends = append(ends, v.HighWatermark)
		}
	}
	if len(keys) == 0 {
		delete(s.follows, f.agent)
	}
	return co, keys, ends
}

func (s *Service) runFollower(f *follower) {
	for {
		co, keys, ends := s.followed(f)
		if len(keys) == 0 {
			return
		}
		req := &disklesswire.IndexRequest{MaxWaitMs: int32(s.cfg.IndexPoll.Milliseconds())}
		for i, k := range keys {
			req.Partitions = append(req.Partitions, disklesswire.IndexPartition{
				TopicID: k.TopicID, Partition: k.Partition, Op: disklesswire.OpRead, Value: ends[i], MaxBytes: 1})
		}
		resp, err := s.poll(f, co, req)
		select {
		case <-s.stop:
			return
		default:
		}
		if err != nil {
			s.logger.Debug("diskless index follower: poll failed", "coordinator", co.Agent, "error", err)
			s.pause(followerRetryPause)
			continue
		}
		for i, a := range resp.Partitions {
			if a.ErrorCode != 0 {
				// Moved or not loaded: the next read looks the
				// coordinator up again and follows it there.
				s.forget(keys[i], f.agent)
				continue
			}
			s.learn(keys[i], co, viewOf(a))
		}
	}
}

// poll sends req to f's agent, cut short when the partitions f follows
// grow or the service stops.
func (s *Service) poll(f *follower, co Coord, req *disklesswire.IndexRequest) (*disklesswire.IndexResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.IndexPoll+lookupTimeout)
	defer cancel()
	go func() {
		select {
		case <-f.grew:
			cancel()
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var resp *disklesswire.IndexResponse
	err := s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error {
		var err error
		resp, err = c.DisklessIndex(ctx, req)
		return err
	})
	return resp, err
}

// forget stops following k at agent: its coordinator is elsewhere now.
func (s *Service) forget(k batchcoord.PartitionKey, agent int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.views[k]; ok && v.coord.Agent == agent {
		v.readAt = time.Time{}
	}
}

// pause waits d or until the service stops.
func (s *Service) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	}
}
