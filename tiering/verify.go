package tiering

// Verify checks a bucket the way `strata verify` reports it: every
// manifest entry's objects exist with the recorded sizes and the .log
// object with its CRC-32C, and lists the segment objects no manifest
// names (orphans). It reads through any Reader, so the CLI can use an
// S3 client independent of the agent's.

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Reader is the read side of a bucket.
type Reader interface {
	Get(ctx context.Context, key string) ([]byte, objstore.Attributes, error)
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	Stat(ctx context.Context, key string) (objstore.Attributes, error)
	List(ctx context.Context, prefix string, fn func(key string, attrs objstore.Attributes) error) error
}

// Problem is one thing Verify found wrong.
type Problem struct {
	Partition string `json:"partition"` // the partition prefix
	Key       string `json:"key"`
	What      string `json:"what"`
}

// Orphan is an object no manifest names.
type Orphan struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"last_modified"`
}

// Report is the result of Verify.
type Report struct {
	Partitions int       `json:"partitions"`
	Segments   int       `json:"segments"`
	Bytes      int64     `json:"bytes"`
	Retired    int       `json:"retired"` // objects a compaction replaced, awaiting deletion
	Problems   []Problem `json:"problems"`
	Orphans    []Orphan  `json:"orphans"`
}

// Verify checks every manifest under topics/ in r. With checksums, it
// reads every .log object to check its CRC-32C; without, sizes only.
func Verify(ctx context.Context, r Reader, checksums bool) (Report, error) {
	var rep Report
	var heads []string
	err := r.List(ctx, "topics/", func(key string, _ objstore.Attributes) error {
		if strings.HasSuffix(key, "/manifest/head.json") {
			heads = append(heads, strings.TrimSuffix(key, "manifest/head.json"))
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("list manifests: %w", err)
	}
	for _, prefix := range heads {
		if err := verifyPartition(ctx, r, prefix, checksums, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func verifyPartition(ctx context.Context, r Reader, prefix string, checksums bool, rep *Report) error {
	rep.Partitions++
	m := NewManifest(readOnly{r}, prefix, 0)
	h, _, err := m.Load(ctx)
	if err != nil {
		rep.Problems = append(rep.Problems, Problem{prefix, prefix + "manifest/head.json", err.Error()})
		return nil
	}
	known := map[string]bool{}
	for _, r := range h.Retired {
		known[r.Key] = true // deleted by the janitor after the compaction grace
		rep.Retired++
	}
	for _, ref := range h.Pages {
		known[ref.Key] = true
		entries, err := m.Page(ctx, ref)
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{prefix, prefix + ref.Key, err.Error()})
			continue
		}
		for _, e := range entries {
			known[e.Object] = true
		}
	}
	for _, e := range h.Tail {
		known[e.Object] = true
	}
	entries, err := m.All(ctx, &h)
	if err != nil {
		return nil // the page problem is reported above
	}
	for _, e := range entries {
		rep.Segments++
		rep.Bytes += e.Size
		want := map[string]int64{suffixLog: e.Size, suffixIndex: e.IndexSize, suffixTimeIndex: e.TimeSize}
		if e.Snapshot {
			want[suffixSnapshot] = -1
		}
		if e.TxnIndexSize > 0 {
			want[suffixTxnIndex] = e.TxnIndexSize
		}
		for _, suffix := range slices.Sorted(maps.Keys(want)) {
			key := prefix + e.Object + suffix
			attrs, err := r.Stat(ctx, key)
			switch {
			case objstore.IsNotFound(err):
				rep.Problems = append(rep.Problems, Problem{prefix, key, "missing: the manifest names it"})
				continue
			case err != nil:
				return fmt.Errorf("stat %s: %w", key, err)
			case want[suffix] >= 0 && attrs.Size != want[suffix]:
				rep.Problems = append(rep.Problems, Problem{prefix, key, fmt.Sprintf("size %d, the manifest says %d", attrs.Size, want[suffix])})
				continue
			}
			if suffix == suffixLog && checksums {
				if sum, err := crcOf(ctx, r, key, e.Size); err != nil {
					rep.Problems = append(rep.Problems, Problem{prefix, key, "unreadable: " + err.Error()})
				} else if sum != e.CRC32C {
					rep.Problems = append(rep.Problems, Problem{prefix, key, fmt.Sprintf("CRC-32C %08x, the manifest says %08x", sum, e.CRC32C)})
				}
			}
		}
	}
	for _, dir := range []string{"segments/", "manifest/pages/"} {
		err := r.List(ctx, prefix+dir, func(key string, attrs objstore.Attributes) error {
			rel := strings.TrimPrefix(key, prefix)
			if dir == "segments/" {
				rel = strings.TrimSuffix(rel, suffixOf(rel))
			}
			if !known[rel] {
				rep.Orphans = append(rep.Orphans, Orphan{Key: key, Size: attrs.Size, LastModified: attrs.LastModified})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix+dir, err)
		}
	}
	return nil
}

func crcOf(ctx context.Context, r Reader, key string, size int64) (uint32, error) {
	body, err := r.GetRange(ctx, key, 0, -1)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, body)
	if err != nil {
		return 0, err
	}
	if n != size {
		return 0, fmt.Errorf("read %d bytes of %d", n, size)
	}
	return h.Sum32(), nil
}

// readOnly lets a Manifest read through a Reader; writes fail.
type readOnly struct{ Reader }

func (readOnly) Put(context.Context, string, []byte, objstore.PutOptions) (string, error) {
	return "", errReadOnly
}
func (readOnly) PutReader(context.Context, string, io.ReaderAt, int64, objstore.PutOptions) (string, error) {
	return "", errReadOnly
}
func (readOnly) Delete(context.Context, string) error { return errReadOnly }
func (readOnly) Close() error                         { return nil }

var errReadOnly = fmt.Errorf("tiering: verify never writes")
