package vfs

import "os"

// WriteBehind keeps a large file being written sequentially from piling
// up in the page cache: after each window of bytes it queues that window's
// writeback and waits for the one before it to reach the device (Linux's
// sync_file_range; elsewhere it does nothing). The file's dirty pages stay
// within about two windows, so its final fsync is short and the copy
// reaches the disk as a steady stream rather than one burst at the fsync,
// behind which every other file's fsync would queue: the producers' fsyncs
// while a sealed 1 GiB segment is copied into a file:// store on the same
// disk. Errors are left to the final fsync, which reports a failed
// writeback of any page of the file.
type WriteBehind struct {
	f       *os.File
	window  int64
	written int64 // bytes written from the start offset
	queued  int64 // bytes whose writeback was started
	start   int64 // file offset where the sequential write began
}

// NewWriteBehind follows writes to f that begin at offset start.
func NewWriteBehind(f *os.File, start, window int64) *WriteBehind {
	return &WriteBehind{f: f, window: window, start: start}
}

// Wrote records n more bytes written after the previous ones.
func (w *WriteBehind) Wrote(n int64) {
	w.written += n
	for w.written-w.queued >= w.window {
		_ = startWriteback(w.f, w.start+w.queued, w.window)
		if w.queued >= w.window {
			_ = awaitWriteback(w.f, w.start+w.queued-w.window, w.window)
		}
		w.queued += w.window
	}
}

// Write lets a WriteBehind follow an io.Writer chain (io.MultiWriter):
// it counts the bytes and keeps none.
func (w *WriteBehind) Write(p []byte) (int, error) {
	w.Wrote(int64(len(p)))
	return len(p), nil
}
