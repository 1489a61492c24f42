package log

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/internal/vfs"
)

// BenchmarkAppendFsync appends with log.flush=always on the real disk
// (t.TempDir), to a growing file and to a preallocated one. fsyncs/op
// below 1 in the parallel variant is group commit.
func BenchmarkAppendFsync(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, variant := range []string{"", "/prealloc", "/parallel", "/parallel/prealloc"} {
			parallel := strings.Contains(variant, "parallel")
			b.Run(fmt.Sprintf("%dKiB%s", size>>10, variant), func(b *testing.B) {
				cfg := DefaultConfig()
				l, err := Open(b.TempDir(), cfg, Options{FS: vfs.Default, Logger: quietLogger(), Preallocate: strings.Contains(variant, "prealloc")})
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

// BenchmarkAppendManyLogs is one Produce spread over 100 partitions per
// op, as a producer over many partitions sends: a 1 KiB batch written to
// each of 100 logs, then every fsync awaited at once; once with an fsync
// per log and once with a Syncer, which makes the concurrent syncs one
// syncfs.
func BenchmarkAppendManyLogs(b *testing.B) {
	const logs = 100
	for _, grouped := range []bool{false, true} {
		name := "fsync-per-log"
		if grouped {
			name = "syncer"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{FS: vfs.Default, Logger: quietLogger()}
			if grouped {
				s, err := NewSyncer(vfs.Default, dir)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				opts.Syncer = s
			}
			ls := make([]*Log, logs)
			for i := range ls {
				l, err := Open(filepath.Join(dir, fmt.Sprint(i)), DefaultConfig(), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				ls[i] = l
			}
			proto := mkBatch(b, spec{valueSize: 1<<10 - 80})
			bufs := make([][]byte, logs)
			for i := range bufs {
				bufs[i] = append([]byte(nil), proto...)
			}
			b.SetBytes(int64(logs * len(proto)))
			b.ResetTimer()
			for range b.N {
				waits := make([]Durable, logs)
				for i, l := range ls {
					_, d, err := l.Write(bufs[i], 0)
					if err != nil {
						b.Fatal(err)
					}
					waits[i] = d
				}
				var wg sync.WaitGroup
				for _, d := range waits {
					wg.Go(func() {
						if err := d.Wait(); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
		})
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
