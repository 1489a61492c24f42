package log

import (
	"bytes"
	"math"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// FuzzRecovery: arbitrary bytes as the only segment must open without a
// panic, and the recovered log must be the longest prefix of whole, valid
// batches whose offsets increase (gaps are the cleaner's) within the
// segment's 32-bit relative range, byte for byte.
func FuzzRecovery(f *testing.F) {
	var valid []byte
	for i := 0; i < 4; i++ {
		b := mkBatch(f, spec{records: 1 + i, ts: int64(i)})
		batch.SetBaseOffset(b, int64(i*(i+1)/2))
		valid = append(valid, b...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add(append(append([]byte(nil), valid...), 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 70))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 80))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		mem.MkdirAll("/p", 0o755)
		fl, _ := mem.Create("/p/" + segmentName(0) + logSuffix)
		fl.Write(data)
		fl.Close()
		l, err := Open("/p", testConfig(), Options{FS: mem, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		// The expected prefix, computed independently of the log's scanner.
		want, next := 0, int64(0)
		for want < len(data) {
			size, err := batch.PeekSize(data[want:])
			if err != nil || size > len(data)-want {
				break
			}
			h, err := batch.Check(data[want : want+size])
			if err != nil || h.BaseOffset < next || h.LastOffset() > math.MaxInt32 {
				break
			}
			want += size
			next = h.NextOffset()
		}
		if l.Size() != int64(want) || l.LogEndOffset() != next {
			t.Fatalf("recovered %d bytes to offset %d, want %d to %d", l.Size(), l.LogEndOffset(), want, next)
		}
		var got []byte
		for _, b := range readAll(t, l) {
			got = append(got, b...)
		}
		if !bytes.Equal(got, data[:want]) {
			t.Fatal("recovered bytes differ from the valid prefix")
		}
		b, _ := vfs.ReadFile(mem, "/p/"+segmentName(0)+logSuffix, 1<<30)
		if len(b) != want {
			t.Fatalf("segment file %d bytes, want %d", len(b), want)
		}
	})
}
