package objstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
)

// fsLockStripes is how many lock files one fs bucket uses. Keys hash onto
// stripes; two keys on one stripe merely wait for each other. A fixed number
// of files, rather than one per key, means lock files never pile up and are
// never deleted (deleting a lock file that another process holds open would
// let two processes "hold" the same lock).
const fsLockStripes = 256

// fsLocks serialises mutations of a key within the process (a one-slot
// channel per stripe, so waiting honours ctx and at most one goroutine per
// stripe sits blocked in flock) and across processes (flock on the stripe's
// file). Lock order: channel first, then flock.
type fsLocks struct {
	dir   string
	slots [fsLockStripes]chan struct{}
}

func newFSLocks(dir string) *fsLocks {
	l := &fsLocks{dir: dir}
	for i := range l.slots {
		l.slots[i] = make(chan struct{}, 1)
	}
	return l
}

// stripe maps a key to its stripe with FNV-1a, which is stable across
// processes and builds (unlike maphash), as it must be for the flock to
// protect the same key in every process.
func stripe(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % fsLockStripes)
}

// lock takes the key's stripe lock and returns the function that releases
// it. Waiting for the in-process slot honours ctx; the flock wait does not
// (flock cannot be interrupted), but holders keep it only for a check, a
// rename and an fsync.
func (l *fsLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	i := stripe(key)
	select {
	case l.slots[i] <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release, err := flockFile(filepath.Join(l.dir, fmt.Sprintf("%02x", i)))
	if err != nil {
		<-l.slots[i]
		return nil, err
	}
	return func() {
		release()
		<-l.slots[i]
	}, nil
}
