package objstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// List walks the directory tree in lexical order of full keys. Sorting each
// directory by name is not enough: keys "a/b" and "a-c" sort as "a-c" <
// "a/b" because '-' < '/', but the directory "a" sorts before the file
// "a-c". So a directory is ordered by its name plus "/", which is exactly
// the prefix every key under it shares. Subtrees that cannot hold a key
// under prefix are not read.
//
// The walk sees a changing tree: objects and directories removed while it
// runs are skipped, and a Put in flight shows either its old or new
// version (or, for a new key, may or may not appear).
func (b *FSBucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	if b.closed.Load() {
		return ErrClosed
	}
	return b.listDir(ctx, "", prefix, fn)
}

type fsListEntry struct {
	key     string // full key of the file or directory
	sortKey string // key, plus "/" for a directory
	dir     bool
}

func (b *FSBucket) listDir(ctx context.Context, rel, prefix string, fn func(string, Attributes) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirPath := filepath.Join(b.root, filepath.FromSlash(rel))
	dirents, err := os.ReadDir(dirPath)
	if isMissing(err) {
		return nil // removed (pruned by a Delete) since the parent was read
	}
	if err != nil {
		return fmt.Errorf("fs: list %q: %w", prefix, err)
	}
	entries := make([]fsListEntry, 0, len(dirents))
	for _, d := range dirents {
		name := d.Name()
		if strings.HasPrefix(name, ReservedPrefix) {
			continue // temp files, lock directory
		}
		key := name
		if rel != "" {
			key = rel + "/" + name
		}
		switch {
		case d.IsDir():
			sortKey := key + "/"
			if strings.HasPrefix(sortKey, prefix) || strings.HasPrefix(prefix, sortKey) {
				entries = append(entries, fsListEntry{key: key, sortKey: sortKey, dir: true})
			}
		case d.Type().IsRegular():
			if strings.HasPrefix(key, prefix) {
				entries = append(entries, fsListEntry{key: key, sortKey: key})
			}
		}
		// Anything else (symlinks, sockets) was not written by this
		// backend and is not an object.
	}
	slices.SortFunc(entries, func(x, y fsListEntry) int { return strings.Compare(x.sortKey, y.sortKey) })
	for _, e := range entries {
		if e.dir {
			if err := b.listDir(ctx, e.key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f, _, attrs, err := openObject(e.key, filepath.Join(dirPath, filepath.Base(e.key)))
		if IsNotFound(err) {
			continue // deleted since ReadDir
		}
		if err != nil {
			return err
		}
		f.Close()
		if err := fn(e.key, attrs); err != nil {
			return err
		}
	}
	return nil
}
