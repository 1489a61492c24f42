package partition

import "testing"

// TestSignalWakesWatchers: a Notify closes the channel Wait returned and
// wakes every watcher once, without blocking on one not yet read; after
// Unwatch it no longer wakes that one.
func TestSignalWakesWatchers(t *testing.T) {
	var s Signal
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	s.Watch(a)
	s.Watch(b)
	waiting := s.Wait()
	s.Notify()
	s.Notify() // a and b are not read yet: this must not block
	select {
	case <-waiting:
	default:
		t.Fatal("Notify did not close the channel Wait returned")
	}
	for name, w := range map[string]chan struct{}{"a": a, "b": b} {
		select {
		case <-w:
		default:
			t.Fatalf("watcher %s not woken", name)
		}
	}
	s.Unwatch(a)
	s.Notify()
	select {
	case <-a:
		t.Fatal("an unwatched channel was woken")
	default:
	}
	select {
	case <-b:
	default:
		t.Fatal("the remaining watcher was not woken")
	}
}
