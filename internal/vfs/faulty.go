package vfs

import (
	"os"
	"sync"
	"time"
)

// Op is a kind of operation that Faulty can fail.
type Op int

const (
	// OpWrite is File.Write and File.WriteAt.
	OpWrite Op = iota
	// OpSync is File.Sync and FS.SyncDir.
	OpSync
	// OpTruncate is File.Truncate and FS.Truncate.
	OpTruncate
	// OpCreate is Create and OpenFile with O_CREATE.
	OpCreate
	// OpRename is FS.Rename.
	OpRename
	// OpRead is File.Read and File.ReadAt.
	OpRead
	numOps
)

func (o Op) String() string {
	return [...]string{"write", "sync", "truncate", "create", "rename", "read"}[o]
}

// Faulty wraps an FS and fails chosen operations, for tests of how storage
// code behaves on a full disk or a failing device. It counts every operation
// of each kind; a rule set with FailAfter or FailOnce makes the operation
// fail once the given number of further operations of that kind succeeded.
//
// With short writes on, a failing write first stores the first half of its
// bytes, as a filling disk does, so callers must cope with partial writes.
//
// SetDelay makes every operation of a kind take longer, as on a slow
// device: a test can then count on a copy of some bytes not being done
// within that time.
type Faulty struct {
	fs FS

	mu     sync.Mutex
	counts [numOps]int
	rules  [numOps]*rule
	delays [numOps]time.Duration
	short  bool
	held   chan struct{} // File.Sync waits on it while set
}

type rule struct {
	left   int // successes still allowed
	err    error
	sticky bool // keep failing after the first failure
}

var _ FS = (*Faulty)(nil)

// NewFaulty wraps fs; with no rules it passes everything through.
func NewFaulty(fs FS) *Faulty { return &Faulty{fs: fs} }

// FailAfter makes op fail with err after n more successes, and keep failing
// until Clear (a full disk stays full).
func (f *Faulty) FailAfter(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[op] = &rule{left: n, err: err, sticky: true}
}

// FailOnce makes only the (n+1)th next op fail with err.
func (f *Faulty) FailOnce(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules[op] = &rule{left: n, err: err}
}

// SetShortWrites chooses whether a failing write stores half its bytes first.
func (f *Faulty) SetShortWrites(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.short = on
}

// SetDelay makes every later operation of kind op wait d before it goes
// ahead (or fails); 0 removes the delay. Clear leaves delays alone.
func (f *Faulty) SetDelay(op Op, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays[op] = d
}

// Clear removes every rule (the counts stay).
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = [numOps]*rule{}
}

// HoldSyncs makes every File.Sync wait until release is called, for tests
// that need writes to pile up behind an fsync in flight.
func (f *Faulty) HoldSyncs() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.held = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.held == gate {
				f.held = nil
			}
			f.mu.Unlock()
			close(gate)
		})
	}
}

// Count is how many operations of kind op were attempted, failed or not.
func (f *Faulty) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// hit waits out op's delay, counts one op and returns the injected error,
// or nil to go ahead.
func (f *Faulty) hit(op Op) (err error, short bool) {
	f.mu.Lock()
	d := f.delays[op]
	f.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[op]++
	r := f.rules[op]
	if r == nil {
		return nil, false
	}
	if r.left > 0 {
		r.left--
		return nil, false
	}
	if !r.sticky {
		f.rules[op] = nil
	}
	return r.err, f.short
}

func (f *Faulty) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err, _ := f.hit(OpCreate); err != nil {
			return nil, pathErr("open", name, err)
		}
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *Faulty) Open(name string) (File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

func (f *Faulty) Create(name string) (File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (f *Faulty) Rename(oldname, newname string) error {
	if err, _ := f.hit(OpRename); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.fs.Rename(oldname, newname)
}

func (f *Faulty) Remove(name string) error                    { return f.fs.Remove(name) }
func (f *Faulty) MkdirAll(dir string, perm os.FileMode) error { return f.fs.MkdirAll(dir, perm) }
func (f *Faulty) ReadDir(dir string) ([]string, error)        { return f.fs.ReadDir(dir) }
func (f *Faulty) Stat(name string) (os.FileInfo, error)       { return f.fs.Stat(name) }

func (f *Faulty) Truncate(name string, size int64) error {
	if err, _ := f.hit(OpTruncate); err != nil {
		return pathErr("truncate", name, err)
	}
	return f.fs.Truncate(name, size)
}

func (f *Faulty) SyncDir(dir string) error {
	if err, _ := f.hit(OpSync); err != nil {
		return pathErr("sync", dir, err)
	}
	return f.fs.SyncDir(dir)
}

type faultyFile struct {
	File
	fs *Faulty
}

var _ File = (*faultyFile)(nil)

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err, short := f.fs.hit(OpWrite); err != nil {
		n := 0
		if short && len(p) > 1 {
			n, _ = f.File.WriteAt(p[:len(p)/2], off)
		}
		return n, pathErr("write", f.Name(), err)
	}
	return f.File.WriteAt(p, off)
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if err, short := f.fs.hit(OpWrite); err != nil {
		n := 0
		if short && len(p) > 1 {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, pathErr("write", f.Name(), err)
	}
	return f.File.Write(p)
}

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err, _ := f.fs.hit(OpRead); err != nil {
		return 0, pathErr("read", f.Name(), err)
	}
	return f.File.ReadAt(p, off)
}

func (f *faultyFile) Read(p []byte) (int, error) {
	if err, _ := f.fs.hit(OpRead); err != nil {
		return 0, pathErr("read", f.Name(), err)
	}
	return f.File.Read(p)
}

func (f *faultyFile) Sync() error {
	f.fs.mu.Lock()
	gate := f.fs.held
	f.fs.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if err, _ := f.fs.hit(OpSync); err != nil {
		return pathErr("sync", f.Name(), err)
	}
	return f.File.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if err, _ := f.fs.hit(OpTruncate); err != nil {
		return pathErr("truncate", f.Name(), err)
	}
	return f.File.Truncate(size)
}
