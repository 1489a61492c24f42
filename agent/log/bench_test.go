package log

import (
	"fmt"
	"testing"

	"github.com/strata-streaming/strata/internal/vfs"
)

// BenchmarkAppendFsync appends with log.flush=always on the real disk
// (t.TempDir). fsyncs/op below 1 in the parallel variant is group commit.
func BenchmarkAppendFsync(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, parallel := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB", size>>10)
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				cfg := DefaultConfig()
				l, err := Open(b.TempDir(), cfg, Options{FS: vfs.Default, Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				proto := mkBatch(b, spec{valueSize: size - 80})
				b.SetBytes(int64(len(proto)))
				b.ReportAllocs()
				before := l.Stats().Fsyncs
				b.ResetTimer()
				if parallel {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						buf := append([]byte(nil), proto...)
						for pb.Next() {
							if _, err := l.Append(buf, 0); err != nil {
								b.Error(err)
								return
							}
						}
					})
				} else {
					buf := append([]byte(nil), proto...)
					for i := 0; i < b.N; i++ {
						if _, err := l.Append(buf, 0); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(l.Stats().Fsyncs-before)/float64(b.N), "fsyncs/op")
			})
		}
	}
}

// BenchmarkRead reads 1 MiB at a time sequentially through a 64 MiB log.
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Flush = FlushNever
	l, err := Open(b.TempDir(), cfg, Options{FS: vfs.Default, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	proto := mkBatch(b, spec{records: 4, valueSize: 4000})
	for l.Size() < 64<<20 {
		if _, err := l.Append(append([]byte(nil), proto...), 0); err != nil {
			b.Fatal(err)
		}
	}
	const maxBytes = 1 << 20
	b.SetBytes(maxBytes)
	b.ReportAllocs()
	b.ResetTimer()
	off, end := int64(0), l.LogEndOffset()
	for i := 0; i < b.N; i++ {
		data, err := l.Read(off, maxBytes, end, true)
		if err != nil {
			b.Fatal(err)
		}
		off += int64(len(data) / len(proto) * 4)
		if off >= end {
			off = 0
		}
	}
}
