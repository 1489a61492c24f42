package partition

import (
	"slices"
	"sync"
)

// Signal is a broadcast: Wait returns a channel that the next Notify
// closes, and every Notify also wakes the channels given to Watch (a send
// that does not block: give one with a buffer of one). Watch lets one
// waiter wait on many signals at once, as a follower's long poll over
// every partition it fetches does. The zero value is ready to use; it is
// safe for concurrent use.
type Signal struct {
	mu       sync.Mutex
	ch       chan struct{}
	watchers []chan<- struct{}
}

// Wait returns the channel the next Notify closes.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Watch makes every Notify wake wake until Unwatch.
func (s *Signal) Watch(wake chan<- struct{}) {
	s.mu.Lock()
	s.watchers = append(s.watchers, wake)
	s.mu.Unlock()
}

// Unwatch undoes one Watch of wake.
func (s *Signal) Unwatch(wake chan<- struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.watchers, wake); i >= 0 {
		last := len(s.watchers) - 1
		s.watchers[i] = s.watchers[last]
		s.watchers[last] = nil
		s.watchers = s.watchers[:last]
	}
}

// Notify wakes everyone waiting.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	for _, w := range s.watchers {
		select {
		case w <- struct{}{}:
		default: // already woken, not yet read
		}
	}
}
