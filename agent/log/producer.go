package log

import (
	"fmt"

	"github.com/strata-streaming/strata/agent/log/producers"
)

// A producer snapshot file is the payload of producers.State.Encode in the
// checkpoint framing (checkpoint.go): magicProducer for the current
// layout, magicProducerV1 for the one from before transactions, which
// still loads. The rules themselves live in package producers.

// encodeSnapshot frames the state as of offset (every batch below it).
func encodeSnapshot(ps *producers.State, offset int64) []byte {
	return encodeFrame(magicProducer, ps.Encode(offset))
}

// decodeSnapshot reads a snapshot file of either layout.
func decodeSnapshot(b []byte) (int64, *producers.State, error) {
	p, err := decodeFrame(magicProducer, b)
	withTxn := err == nil
	if !withTxn {
		var v1Err error
		if p, v1Err = decodeFrame(magicProducerV1, b); v1Err != nil {
			return 0, nil, err
		}
	}
	offset, ps, err := producers.Decode(p, withTxn)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: producer snapshot: %w", errBadStateFile, err)
	}
	return offset, ps, nil
}
