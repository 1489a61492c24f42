package kafka

import (
	"bufio"
	"encoding/binary"
	"io"
	"sync/atomic"
)

// Produce frames are read into recycled buffers: a Produce holds its frame
// only until its batches are written to the log (which copies them), and
// allocating a fresh, zeroed buffer for each one, grown by doubling from
// frameChunkBytes, cost the closed-loop produce path a fifth of its CPU.
// The pool is bounded, so that many connections that claim large frames
// and send nothing hold at most pooledFrames buffers of it; past that
// frames are read as before.
const (
	pooledFrameBytes = 1 << 20
	pooledFrames     = 32
	produceKey       = 0
)

type framePool struct {
	free      chan []byte
	allocated atomic.Int32
}

var produceFrames = framePool{free: make(chan []byte, pooledFrames)}

// get returns a buffer of size bytes, or nil when size is not pooled or
// every pooled buffer is in use.
func (p *framePool) get(size int) []byte {
	if size > pooledFrameBytes {
		return nil
	}
	select {
	case b := <-p.free:
		return b[:size]
	default:
	}
	if p.allocated.Add(1) > pooledFrames {
		p.allocated.Add(-1)
		return nil
	}
	return make([]byte, size, pooledFrameBytes)
}

// put gives back a buffer from get; nothing may use it afterwards.
func (p *framePool) put(b []byte) {
	if cap(b) != pooledFrameBytes {
		return
	}
	select {
	case p.free <- b[:0]:
	default:
	}
}

// readFrame reads a frame body of size bytes; pooled reports whether it is
// a Produce frame in a pooled buffer, to be given back once its batches
// are written.
func readFrame(br *bufio.Reader, size int) (frame []byte, pooled bool, err error) {
	if size > frameChunkBytes {
		if key, err := br.Peek(2); err == nil && binary.BigEndian.Uint16(key) == produceKey {
			if buf := produceFrames.get(size); buf != nil {
				if _, err := io.ReadFull(br, buf); err != nil {
					produceFrames.put(buf)
					return nil, false, err
				}
				return buf, true, nil
			}
		}
	}
	frame, err = readFrameBody(br, size)
	return frame, false, err
}
