package batch

import (
	"bytes"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/pierrec/lz4/v4"
)

// gzip and lz4 are stream formats: their readers and writers carry buffers
// worth reusing, so each lives in a sync.Pool together with the small
// adapters it reads from or writes to. Pooled objects never hold on to a
// caller's bytes between uses.

// lz4BlockSize is the LZ4 frame block size we write: the size Kafka's Java
// producer uses, and small enough that a pooled writer stays cheap.
const lz4BlockSize = lz4.Block64Kb

// readGrowMin is the first growth step when streaming into an empty buffer.
const readGrowMin = 4 << 10

// maxIdleReads is how many empty reads in a row readBounded tolerates.
const maxIdleReads = 100

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipReader struct {
	r   gzip.Reader
	src bytes.Reader
}

type gzipWriter struct {
	w   *gzip.Writer
	out appendWriter
}

type lz4Reader struct {
	r   *lz4.Reader
	src bytes.Reader
}

type lz4Writer struct {
	w   *lz4.Writer
	out appendWriter
}

var (
	gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}
	gzipWriters = sync.Pool{New: func() any {
		gw := new(gzipWriter)
		gw.w = gzip.NewWriter(&gw.out)
		return gw
	}}
	lz4Readers = sync.Pool{New: func() any { return &lz4Reader{r: lz4.NewReader(nil)} }}
	lz4Writers = sync.Pool{New: func() any {
		lw := new(lz4Writer)
		lw.w = lz4.NewWriter(&lw.out)
		// Only fails for invalid options; these are constants.
		if err := lw.w.Apply(lz4.BlockSizeOption(lz4BlockSize), lz4.ConcurrencyOption(1)); err != nil {
			panic("batch: lz4 options: " + err.Error())
		}
		return lw
	}}
)

func gunzip(dst, src []byte, maxSize int) ([]byte, error) {
	gr := gzipReaders.Get().(*gzipReader)
	defer func() {
		gr.src.Reset(nil)
		gzipReaders.Put(gr)
	}()
	gr.src.Reset(src)
	if err := gr.r.Reset(&gr.src); err != nil {
		return dst, undecodable(CodecGzip, err)
	}
	return readBounded(dst, &gr.r, CodecGzip, maxSize)
}

func unlz4(dst, src []byte, maxSize int) ([]byte, error) {
	lr := lz4Readers.Get().(*lz4Reader)
	defer func() {
		lr.src.Reset(nil)
		lr.r.Reset(nil)
		lz4Readers.Put(lr)
	}()
	lr.src.Reset(src)
	lr.r.Reset(&lr.src)
	return readBounded(dst, lr.r, CodecLZ4, maxSize)
}

// readBounded appends everything r yields to dst, failing once more than
// maxSize bytes arrive. It grows dst itself, never beyond maxSize+1 new
// bytes, so a bomb costs at most the bound in memory.
func readBounded(dst []byte, r io.Reader, c Codec, maxSize int) ([]byte, error) {
	limit := len(dst) + maxSize
	for idle := 0; ; {
		if len(dst) == cap(dst) {
			grow := max(cap(dst), readGrowMin)
			grow = min(grow, limit+1-len(dst)) // >= 1: len(dst) <= limit here
			dst = slices.Grow(dst, grow)
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst[:limit], overLimit(c, maxSize)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, undecodable(c, err)
		}
		// A reader that keeps returning nothing would spin forever.
		if n == 0 {
			if idle++; idle > maxIdleReads {
				return dst, undecodable(c, io.ErrNoProgress)
			}
		} else {
			idle = 0
		}
	}
}

func gzipAppend(dst, src []byte) ([]byte, error) {
	gw := gzipWriters.Get().(*gzipWriter)
	defer func() {
		gw.out.b = nil
		gzipWriters.Put(gw)
	}()
	gw.out.b = dst
	gw.w.Reset(&gw.out)
	if _, err := gw.w.Write(src); err != nil {
		return dst, err
	}
	if err := gw.w.Close(); err != nil {
		return dst, err
	}
	return gw.out.b, nil
}

func lz4Append(dst, src []byte) ([]byte, error) {
	lw := lz4Writers.Get().(*lz4Writer)
	defer func() {
		lw.out.b = nil
		lz4Writers.Put(lw)
	}()
	lw.out.b = dst
	lw.w.Reset(&lw.out)
	if _, err := lw.w.Write(src); err != nil {
		return dst, err
	}
	if err := lw.w.Close(); err != nil {
		return dst, err
	}
	return lw.out.b, nil
}
