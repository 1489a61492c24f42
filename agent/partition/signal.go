package partition

import "sync"

// Signal is a broadcast: Wait returns a channel that the next Notify
// closes. The zero value is ready to use; it is safe for concurrent use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
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

// Notify wakes everyone waiting.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
