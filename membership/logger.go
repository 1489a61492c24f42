package membership

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// memberlistLogger routes memberlist's log lines to slog at debug level.
// memberlist writes "[LEVEL] memberlist: message"; the level is kept as the
// memberlist_level key. Everything is debug because memberlist warns about
// what is routine in a cluster (a failed probe, a refuted suspicion); the
// events that matter are logged by this package at their own level.
func memberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(slogWriter{l}, "", 0)
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	if !w.l.Enabled(context.Background(), slog.LevelDebug) {
		return len(p), nil
	}
	level, msg := splitMemberlistLine(p)
	w.l.Debug(msg, "component", "memberlist", "memberlist_level", level)
	return len(p), nil
}

// splitMemberlistLine takes "[WARN] memberlist: text\n" apart into "WARN"
// and "text". A line of another shape is returned whole with no level.
func splitMemberlistLine(p []byte) (level, msg string) {
	p = bytes.TrimRight(p, "\n")
	if len(p) > 0 && p[0] == '[' {
		if end := bytes.IndexByte(p, ']'); end > 0 {
			level = string(p[1:end])
			p = bytes.TrimLeft(p[end+1:], " ")
		}
	}
	p = bytes.TrimPrefix(p, []byte("memberlist: "))
	return level, string(p)
}
