package metadata

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// backend builds a fresh bucket; each test runs once per backend.
type backend struct {
	name string
	open func(t *testing.T) objstore.Bucket
}

var backends = []backend{
	{"mem", func(t *testing.T) objstore.Bucket {
		b := objstore.NewMem()
		t.Cleanup(func() { b.Close() })
		return b
	}},
	{"fs", func(t *testing.T) objstore.Bucket {
		b, err := objstore.NewFS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
}

// forEachBackend runs fn as a subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, b objstore.Bucket)) {
	t.Helper()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { fn(t, be.open(t)) })
	}
}

// testSettings keep contention tests quick: short pauses, many retries.
func testSettings() Settings {
	s := DefaultSettings()
	s.CASRetries = 2000
	s.CASBackoffMin = 50 * time.Microsecond
	s.CASBackoffMax = 2 * time.Millisecond
	return s
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newTestStore(t *testing.T, b objstore.Bucket) *Store {
	t.Helper()
	s, err := NewWithSettings(b, testLogger(), testSettings())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testContext ends with the test or after a minute, whichever is first, so
// a hung CAS loop fails the test instead of the whole run.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// seededRand returns a PRNG and logs its seed so a failure can be replayed.
func seededRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// keysUnder lists the keys under prefix.
func keysUnder(t *testing.T, b objstore.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	if err := b.List(context.Background(), prefix, func(key string, _ objstore.Attributes) error {
		keys = append(keys, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func assign(partitions int, replicas ...int32) [][]int32 {
	out := make([][]int32, partitions)
	for i := range out {
		out[i] = append([]int32(nil), replicas...)
	}
	return out
}
