package batch

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Run with:
//
//	go test -run '^$' -bench Validate -count 6 ./agent/log/batch/ | benchstat -

// benchBatch is about 16 KiB of records: 64 records with 240-byte values
// drawn from a 12-letter alphabet (fixed seed), so that the codecs see
// data that compresses about as well as JSON-ish payloads do.
func benchBatch(b *testing.B, c Codec) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	recs := simpleRecords(64, 240, 3)
	for i := range recs {
		for j := range recs[i].Value {
			recs[i].Value[j] = "abcdefgh0123"[rng.IntN(12)]
		}
	}
	raw, err := Build(buildOpts(c), recs)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func benchmarkValidate(b *testing.B, c Codec) {
	raw := benchBatch(b, c)
	info, err := Inspect(raw, ValidateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	opts := ValidateOptions{CheckTimestamps: true, MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64}
	b.SetBytes(int64(info.RecordsSize)) // throughput in uncompressed bytes
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(raw, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateNone(b *testing.B)   { benchmarkValidate(b, CodecNone) }
func BenchmarkValidateZstd(b *testing.B)   { benchmarkValidate(b, CodecZstd) }
func BenchmarkValidateLZ4(b *testing.B)    { benchmarkValidate(b, CodecLZ4) }
func BenchmarkValidateSnappy(b *testing.B) { benchmarkValidate(b, CodecSnappy) }
func BenchmarkValidateGzip(b *testing.B)   { benchmarkValidate(b, CodecGzip) }

func BenchmarkRecompressNoneToZstd(b *testing.B) {
	raw := benchBatch(b, CodecNone)
	b.SetBytes(int64(len(raw) - HeaderSize))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Recompress(raw, CodecZstd, 0); err != nil {
			b.Fatal(err)
		}
	}
}
