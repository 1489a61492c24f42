package log

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// errShortFile means the file ended (or shrank under a concurrent
// truncation) before the bytes a reader expected.
var errShortFile = errors.New("log: file shorter than expected")

// window reads a file through one buffer so that walking batch headers
// costs one ReadAt per chunk rather than one per batch. Slices it returns
// stay valid until the next call when reuse is set; otherwise every refill
// allocates, so earlier slices stay valid for good (the read path hands
// them to the caller without a copy).
type window struct {
	f     vfs.File
	end   int64 // never read at or past this position
	chunk int
	reuse bool
	off   int64
	buf   []byte
}

func (w *window) get(pos int64, n int) ([]byte, error) {
	if n < 0 || pos < 0 || pos+int64(n) > w.end {
		return nil, errShortFile
	}
	if pos >= w.off && pos+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[pos-w.off:][:n], nil
	}
	size := int64(max(n, w.chunk))
	if pos+size > w.end {
		size = w.end - pos
	}
	var buf []byte
	if w.reuse && int64(cap(w.buf)) >= size {
		buf = w.buf[:size]
	} else {
		buf = make([]byte, size)
	}
	got, err := w.f.ReadAt(buf, pos)
	if got < len(buf) {
		w.buf = nil
		if err == nil || errors.Is(err, io.EOF) {
			return nil, errShortFile
		}
		return nil, err
	}
	w.off, w.buf = pos, buf
	return buf[:n], nil
}

// batchAt parses the batch starting at pos. With verify it reads the whole
// batch and checks its CRC; otherwise only the header. Any error other than
// an I/O failure wraps batch.ErrShort or batch.ErrCorrupt/ErrMagic.
func (w *window) batchAt(pos int64, verify bool) (batch.Header, error) {
	var h batch.Header
	if pos+12 > w.end {
		return h, batch.ErrShort
	}
	b, err := w.get(pos, 12)
	if err != nil {
		return h, err
	}
	size, err := batch.PeekSize(b)
	if err != nil {
		return h, err
	}
	if int64(size) > w.end-pos {
		return h, batch.ErrShort
	}
	if verify {
		raw, err := w.get(pos, size)
		if err != nil {
			return h, err
		}
		return batch.Check(raw)
	}
	hb, err := w.get(pos, batch.HeaderSize)
	if err != nil {
		return h, err
	}
	h, err = batch.ParseHeader(hb)
	if err == nil && h.Size() != size {
		err = fmt.Errorf("%w: size changed", batch.ErrCorrupt)
	}
	return h, err
}

// isDataError tells a bad batch (the log ends here) from an I/O failure
// (the log cannot tell where it ends).
func isDataError(err error) bool {
	return errors.Is(err, batch.ErrShort) || errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrMagic)
}
