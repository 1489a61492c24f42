package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRunTopicChanges: a request's changes run in order; those done by
// timeout_ms are answered with their own result, the rest
// REQUEST_TIMED_OUT, and they go on. Once maxLateTopicChanges requests
// have changes going on, the next one waits for its own. Close waits for
// every change.
func TestRunTopicChanges(t *testing.T) {
	s := New(DefaultConfig(), Backends{}, nil, nil)
	release := make(chan struct{})
	var made atomic.Int32
	held := func(context.Context) error {
		<-release
		made.Add(1)
		return nil
	}
	invalid := errors.New("invalid config")
	errs := s.runTopicChanges(50, []topicChange{
		{topic: "a", do: func(context.Context) error { return invalid }},
		{topic: "b", do: held},
		{topic: "c", do: func(context.Context) error { made.Add(1); return nil }},
	})
	if len(errs) != 3 || !errors.Is(errs[0], invalid) || !errors.Is(errs[1], kerr.RequestTimedOut) || !errors.Is(errs[2], kerr.RequestTimedOut) {
		t.Fatalf("answers %v; want the first change's error, then REQUEST_TIMED_OUT twice", errs)
	}
	for range maxLateTopicChanges - 1 {
		if errs := s.runTopicChanges(1, []topicChange{{topic: "d", do: held}}); !errors.Is(errs[0], kerr.RequestTimedOut) {
			t.Fatalf("answer %v, want REQUEST_TIMED_OUT", errs[0])
		}
	}

	answer := make(chan error, 1)
	go func() { answer <- s.runTopicChanges(1, []topicChange{{topic: "e", do: held}})[0] }()
	select {
	case err := <-answer:
		t.Fatalf("answered %v with %d requests' changes going on; want it to wait for its change", err, maxLateTopicChanges)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-answer; err != nil {
		t.Fatalf("answer once the change is done: %v", err)
	}
	s.Close()
	if n, want := made.Load(), int32(2+maxLateTopicChanges); n != want {
		t.Fatalf("Close returned with %d changes made, want %d", n, want)
	}
	if n := s.lateTopicChanges.Load(); n != 0 {
		t.Fatalf("%d requests still counted with changes going on", n)
	}
}
