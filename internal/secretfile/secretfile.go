// Package secretfile reads the small files that hold an agent's secrets
// (gossip keys, HTTP tokens), one secret per line, and watches them for
// changes. Secrets rotate by editing their file: Kubernetes updates a
// mounted Secret in place, and a restart per rotation step would take the
// agent out of service for what is only a change of credentials.
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// MaxBytes bounds a secret file: a few hundred secrets, far more than a
// rotation ever needs.
const MaxBytes = 64 << 10

// Line is one secret of a file, with its line number for messages.
type Line struct {
	Number int
	Text   string
}

// Read returns the secrets of the file at path: its lines with surrounding
// space trimmed, skipping blank lines and lines that start with #. A file
// with no secret is an error.
func Read(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxBytes {
		return nil, fmt.Errorf("longer than %d bytes", MaxBytes)
	}
	var lines []Line
	for i, text := range strings.Split(buf.String(), "\n") {
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		lines = append(lines, Line{Number: i + 1, Text: text})
	}
	if len(lines) == 0 {
		return nil, errors.New("no secret in it (blank lines and # comments are skipped)")
	}
	return lines, nil
}

// stamp is what tells that a file may have changed: a Secret update swaps
// a symlink, which changes the modification time and usually the size of
// what the path names.
type stamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.ModTime(), fi.Size()}, nil
}

// Watcher re-reads a file when it changes and hands its secrets to Apply.
type Watcher struct {
	Path     string
	Interval time.Duration
	// Apply takes the secrets of the file; an error leaves them unused.
	Apply func([]Line) error
	// What names the secrets in log lines ("gossip keys").
	What   string
	Logger *slog.Logger

	last stamp
}

// Load reads the file once and applies it: the start of a watch, whose
// error should stop the caller from starting at all.
func (w *Watcher) Load() error {
	// The stamp is taken first, so a change made while reading is seen by
	// the next check.
	st, err := stampOf(w.Path)
	if err != nil {
		return err
	}
	lines, err := Read(w.Path)
	if err != nil {
		return err
	}
	if err := w.Apply(lines); err != nil {
		return err
	}
	w.last = st
	return nil
}

// Run checks the file every Interval until done closes. A file that cannot
// be read, or whose secrets Apply refuses, leaves the secrets in use as
// they were, with a warning: an agent that dropped its gossip keys would
// drop out of its cluster, and one that dropped its tokens would lock its
// operators out.
func (w *Watcher) Run(done <-chan struct{}) {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		st, err := stampOf(w.Path)
		if err != nil {
			w.Logger.Warn(w.What+" file unreadable; keeping those in use", "file", w.Path, "err", err)
			continue
		}
		if st == w.last {
			continue
		}
		lines, err := Read(w.Path)
		if err == nil {
			err = w.Apply(lines)
		}
		if err != nil {
			w.Logger.Warn(w.What+" file rejected; keeping those in use", "file", w.Path, "err", err)
			continue
		}
		w.last = st
		w.Logger.Info(w.What+" reloaded", "file", w.Path, "count", len(lines))
	}
}
