package coord

import (
	"context"
	"sync"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/txn"
)

var _ txn.ProducerIDs = (*Coordinators)(nil)

// NewProducerID implements kafka.ProducerIDs (InitProducerId of an
// idempotent producer) and txn.ProducerIDs (a transactional id's first
// producer id, and a new one when its epoch runs out).
func (c *Coordinators) NewProducerID(ctx context.Context) (int64, error) { return c.pids.next(ctx) }

// producerIDs hands out producer ids from blocks reserved in the store, so
// that ids stay unique across agents and restarts; the unused rest of a
// block is skipped after a restart.
type producerIDs struct {
	store *metadata.Store
	block int64

	mu          sync.Mutex // guards nextID and end; held across a reservation
	nextID, end int64
}

func (p *producerIDs) next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextID >= p.end {
		first, err := p.store.ReserveProducerIDs(ctx, p.block)
		if err != nil {
			return 0, err
		}
		p.nextID, p.end = first, first+p.block
	}
	id := p.nextID
	p.nextID++
	return id, nil
}
