package objstoretest

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// SeedEnv, if set to an integer, fixes the seed of the suite's random data
// (printed by every test that uses it) to reproduce a failure.
const SeedEnv = "STRATA_TEST_SEED"

// Run runs the acceptance suite. newBucket must return a new, empty bucket
// each time it is called and arrange for it to be closed when t ends.
func Run(t *testing.T, newBucket func(t *testing.T) objstore.Bucket) {
	tests := []struct {
		name string
		fn   func(*testing.T, objstore.Bucket)
	}{
		{"RoundTrip", testRoundTrip},
		{"Missing", testMissing},
		{"Stat", testStat},
		{"GetRange", testGetRange},
		{"OverwriteChangesETag", testOverwrite},
		{"IfAbsent", testIfAbsent},
		{"IfMatch", testIfMatch},
		{"ConflictingOptions", testConflictingOptions},
		{"ConcurrentCAS", testConcurrentCAS},
		{"AtomicOverwrite", testAtomicOverwrite},
		{"List", testList},
		{"ListStopsOnError", testListStops},
		{"Delete", testDelete},
		{"LargeObject", testLargeObject},
		{"PutReader", testPutReader},
		{"PutReaderConditions", testPutReaderConditions},
		{"PutReaderLarge", testPutReaderLarge},
		{"PutReaderBadInput", testPutReaderBadInput},
		{"DeepKeys", testDeepKeys},
		{"InvalidKeys", testInvalidKeys},
		{"CanceledContext", testCanceled},
		{"CloseTwice", testCloseTwice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBucket(t))
		})
	}
}

// rng returns a seeded random source and logs the seed.
func rng(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("random seed %d (set %s to repeat)", seed, SeedEnv)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randomBytes returns n random bytes, eight per call to r: the large
// objects are megabytes, and the race detector slows a byte-at-a-time loop
// tenfold.
func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

func mustPut(t *testing.T, b objstore.Bucket, key string, data []byte, opts objstore.PutOptions) string {
	t.Helper()
	etag, err := b.Put(t.Context(), key, data, opts)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if etag == "" {
		t.Fatalf("Put(%q) returned an empty ETag", key)
	}
	return etag
}

func mustGet(t *testing.T, b objstore.Bucket, key string) ([]byte, objstore.Attributes) {
	t.Helper()
	data, attrs, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return data, attrs
}

func wantContent(t *testing.T, b objstore.Bucket, key string, want []byte) {
	t.Helper()
	got, _ := mustGet(t, b, key)
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %d bytes %.40q, want %d bytes %.40q", key, len(got), got, len(want), want)
	}
}

func wantNotFound(t *testing.T, b objstore.Bucket, key string) {
	t.Helper()
	if _, _, err := b.Get(t.Context(), key); !objstore.IsNotFound(err) {
		t.Fatalf("Get(%q): err = %v, want not found", key, err)
	}
}
