package metadata

import (
	"context"
	"fmt"
	"math"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// ReserveProducerIDs reserves n consecutive producer ids and returns the
// first. producer-ids.json holds the next free id; a reservation is a CAS
// that advances it by n, so blocks never overlap, whether the competing
// callers are goroutines, Stores or agents. Ids of a block that the caller
// never hands out are simply skipped: producer ids are not reused.
func (s *Store) ReserveProducerIDs(ctx context.Context, n int64) (int64, error) {
	if n < 1 || n > s.settings.MaxProducerIDBlock {
		return 0, fmt.Errorf("metadata: producer id block of %d: must be in [1, %d]", n, s.settings.MaxProducerIDBlock)
	}
	var first int64
	err := s.casLoop(ctx, "reserve producer ids", func() (bool, error) {
		var obj producerIDsObject
		etag, err := s.getObject(ctx, producerIDsKey, &obj)
		opts := objstore.PutOptions{IfMatch: etag}
		switch {
		case objstore.IsNotFound(err):
			obj = producerIDsObject{Version: objectVersion}
			opts = objstore.PutOptions{IfAbsent: true}
		case err != nil:
			return false, fmt.Errorf("read %s: %w", producerIDsKey, err)
		case obj.NextProducerID < 0:
			return false, &CorruptError{Key: producerIDsKey, Err: fmt.Errorf("negative next_producer_id %d", obj.NextProducerID)}
		}
		if obj.NextProducerID > math.MaxInt64-n {
			return false, fmt.Errorf("%w: next id %d, asked for %d", ErrProducerIDsExhausted, obj.NextProducerID, n)
		}
		start := obj.NextProducerID
		obj.Version = objectVersion
		obj.NextProducerID = start + n
		_, err = s.bucket.Put(ctx, producerIDsKey, encodeObject(obj), opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write %s: %w", producerIDsKey, err)
		}
		first = start
		return true, nil
	})
	return first, err
}
