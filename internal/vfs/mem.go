package vfs

import (
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is a filesystem in memory that remembers, for every file, the
// content it had at its last Sync. CrashClone returns the filesystem a
// power cut would leave behind: each file holds exactly its synced bytes.
//
// Simplification: directory operations (create, rename, remove, mkdir) are
// durable as soon as they return, as if every SyncDir had already happened.
// A file created and never synced survives a crash empty.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
}

type memNode struct {
	mu      sync.RWMutex
	data    []byte
	synced  []byte
	modTime time.Time
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty memory filesystem.
func NewMem() *MemFS {
	return &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}}
}

// CrashClone returns a new MemFS with the state a crash would leave: every
// file's content is what it held at its last Sync. Open files of m are not
// affected and stay attached to m.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	for name, n := range m.files {
		n.mu.RLock()
		c.files[name] = &memNode{data: slices.Clone(n.synced), synced: slices.Clone(n.synced), modTime: n.modTime}
		n.mu.RUnlock()
	}
	return c
}

func clean(name string) string { return path.Clean(name) }

func pathErr(op, name string, err error) error { return &iofs.PathError{Op: op, Path: name, Err: err} }

// parentExists reports whether name's directory exists; m.mu is held.
func (m *MemFS) parentExists(name string) bool { return m.dirs[path.Dir(name)] }

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		// Directories are not opened as files here; SyncDir covers the
		// one thing callers need a directory handle for.
		return nil, pathErr("open", name, iofs.ErrInvalid)
	}
	n, ok := m.files[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, iofs.ErrExist)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, iofs.ErrNotExist)
	case !ok:
		if !m.parentExists(name) {
			return nil, pathErr("open", name, iofs.ErrNotExist)
		}
		n = &memNode{modTime: time.Now()}
		m.files[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.mu.Lock()
		n.data = n.data[:0]
		n.modTime = time.Now()
		n.mu.Unlock()
	}
	return &memFile{node: n, name: name, flag: flag}, nil
}

func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return pathErr("rename", oldname, iofs.ErrNotExist)
	}
	if m.dirs[newname] || !m.parentExists(newname) {
		return pathErr("rename", newname, iofs.ErrInvalid)
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		// Open handles keep the node, as on Unix.
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		if len(m.childrenLocked(name)) > 0 {
			return pathErr("remove", name, iofs.ErrInvalid)
		}
		delete(m.dirs, name)
		return nil
	}
	return pathErr("remove", name, iofs.ErrNotExist)
}

func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; !m.dirs[d]; d = path.Dir(d) {
		if _, ok := m.files[d]; ok {
			return pathErr("mkdir", d, iofs.ErrExist)
		}
		m.dirs[d] = true
	}
	return nil
}

// childrenLocked lists the direct children of dir; m.mu is held.
func (m *MemFS) childrenLocked(dir string) []string {
	var names []string
	add := func(p string) {
		if p != dir && path.Dir(p) == dir {
			names = append(names, path.Base(p))
		}
	}
	for p := range m.files {
		add(p)
	}
	for p := range m.dirs {
		add(p)
	}
	slices.Sort(names)
	return names
}

func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, pathErr("readdir", dir, iofs.ErrNotExist)
	}
	return m.childrenLocked(dir), nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	n, ok := m.files[name]
	if !ok {
		return nil, pathErr("stat", name, iofs.ErrNotExist)
	}
	return n.info(name), nil
}

func (m *MemFS) Truncate(name string, size int64) error {
	f, err := m.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(size)
}

// SyncDir is a no-op: MemFS directory operations are durable at once.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return pathErr("sync", dir, iofs.ErrNotExist)
	}
	return nil
}

func (n *memNode) info(name string) memInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memInfo{name: path.Base(name), size: int64(len(n.data)), modTime: n.modTime}
}

type memFile struct {
	node   *memNode
	name   string
	flag   int
	mu     sync.Mutex // guards pos and closed
	pos    int64
	closed bool
}

var _ File = (*memFile)(nil)

func (f *memFile) check(op string, write bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr(op, f.name, iofs.ErrClosed)
	}
	if write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return pathErr(op, f.name, iofs.ErrPermission)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, iofs.ErrInvalid)
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	pos := f.pos
	f.mu.Unlock()
	n, err := f.ReadAt(p, pos)
	f.mu.Lock()
	f.pos += int64(n)
	f.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, iofs.ErrInvalid)
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	f.node.writeAtLocked(p, off)
	return len(p), nil
}

func (n *memNode) writeAtLocked(p []byte, off int64) {
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		n.data = slices.Grow(n.data, int(end)-len(n.data))[:end]
	}
	copy(n.data[off:], p)
	n.modTime = time.Now()
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.flag&os.O_APPEND != 0 {
		f.pos = int64(len(f.node.data))
	}
	f.node.writeAtLocked(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) Sync() error {
	if err := f.check("sync", false); err != nil {
		return err
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	f.node.synced = slices.Clone(f.node.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, iofs.ErrInvalid)
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size <= int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = append(f.node.data, make([]byte, int(size)-len(f.node.data))...)
	}
	f.node.modTime = time.Now()
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.node.info(f.name), nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, iofs.ErrClosed)
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name    string
	size    int64
	modTime time.Time
	dir     bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.modTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// String is for test failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.files))
	for n := range m.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return "memfs[" + strings.Join(names, " ") + "]"
}
