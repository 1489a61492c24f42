package replica

import (
	"fmt"
	"strings"
	"time"
)

// base is time zero of the tests; scripts give times as milliseconds
// after it.
var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeLog is an in-memory stand-in for agent/log's epoch-related state,
// with the same rules: an epoch is recorded at the offset of its first
// batch, truncation drops epochs that start at or after the new end, and
// EndOffsetForEpoch answers as Kafka's LeaderEpochFileCache.
type fakeLog struct {
	start, leo, durable int64
	epochs              []fakeEpoch
}

type fakeEpoch struct {
	epoch int32
	start int64
}

var _ EpochLog = (*fakeLog)(nil)

func (l *fakeLog) LatestEpoch() int32 {
	if len(l.epochs) == 0 {
		return UndefinedEpoch
	}
	return l.epochs[len(l.epochs)-1].epoch
}

func (l *fakeLog) LogEndOffset() int64 { return l.leo }

func (l *fakeLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if epoch < 0 || len(l.epochs) == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if epoch == l.LatestEpoch() {
		return epoch, l.leo
	}
	for i, e := range l.epochs {
		if e.epoch > epoch {
			if i == 0 {
				return epoch, e.start
			}
			return l.epochs[i-1].epoch, e.start
		}
	}
	return UndefinedEpoch, UndefinedOffset
}

func (l *fakeLog) end() LogEnd { return LogEnd{LEO: l.leo, Durable: l.durable} }

// append writes records up to end in epoch, durable at once.
func (l *fakeLog) append(end int64, epoch int32) {
	if end <= l.leo {
		return
	}
	if epoch > l.LatestEpoch() {
		l.epochs = append(l.epochs, fakeEpoch{epoch, l.leo})
	}
	l.leo, l.durable = end, end
}

func (l *fakeLog) truncate(offset int64) {
	if offset >= l.leo {
		return
	}
	l.leo = offset
	l.durable = min(l.durable, offset)
	if l.leo < l.start {
		l.start = l.leo
	}
	for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].start >= l.leo {
		l.epochs = l.epochs[:len(l.epochs)-1]
	}
}

// restart is TruncateTo(start) then RestartAt(offset).
func (l *fakeLog) restart(offset int64) {
	l.truncate(l.start)
	l.start, l.leo, l.durable = offset, offset, offset
}

func (l *fakeLog) String() string {
	var es []string
	for _, e := range l.epochs {
		es = append(es, fmt.Sprintf("%d@%d", e.epoch, e.start))
	}
	s := fmt.Sprintf("log start=%d leo=%d", l.start, l.leo)
	if l.durable != l.leo {
		s += fmt.Sprintf(" durable=%d", l.durable)
	}
	return s + " epochs=" + strings.Join(es, ",")
}
