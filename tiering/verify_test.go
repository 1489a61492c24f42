package tiering

import (
	"context"
	"hash/crc32"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestVerifyFindsProblems: a missing object, a wrong checksum and an
// unreferenced object are each reported; a sound entry is not.
func TestVerifyFindsProblems(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	prefix := "topics/00000000000000000000000000000001/0/"
	m := NewManifest(b, prefix, 10)
	put := func(key string, data []byte) {
		if _, err := b.Put(ctx, prefix+key, data, objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("batches")
	for i, name := range []string{"segments/a", "segments/b", "segments/c"} {
		put(name+suffixLog, data)
		put(name+suffixIndex, nil)
		put(name+suffixTimeIndex, nil)
		e := Entry{Base: int64(i * 10), Next: int64(i*10 + 10), Size: int64(len(data)), Object: name,
			CRC32C: crc32.Checksum(data, castagnoli)}
		if name == "segments/b" {
			e.CRC32C++ // the manifest disagrees with the object
		}
		if _, err := m.Append(ctx, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	b.Delete(ctx, prefix+"segments/c"+suffixIndex)
	put("segments/stray"+suffixLog, data)

	rep, err := Verify(ctx, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Partitions != 1 || rep.Segments != 3 || len(rep.Problems) != 2 || len(rep.Orphans) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if rep.Problems[0].Key != prefix+"segments/b"+suffixLog || rep.Problems[1].Key != prefix+"segments/c"+suffixIndex {
		t.Errorf("problems: %+v", rep.Problems)
	}
	if rep.Orphans[0].Key != prefix+"segments/stray"+suffixLog {
		t.Errorf("orphans: %+v", rep.Orphans)
	}
}
