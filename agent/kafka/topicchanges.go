package kafka

// Topic changes and timeout_ms.
//
// CreateTopics, CreatePartitions and DeleteTopics carry timeout_ms: how
// long the broker may take to answer, not how long the change may take.
// Kafka answers REQUEST_TIMED_OUT for a change not done by then and
// carries on with it; so does Strata. Answering later is worse than it looks: clients set their
// read deadline from timeout_ms (franz-go: timeout_ms plus 10 s), cut a
// broker that overruns it off, and send the same request again, whose
// answer then reports what the first attempt did (TOPIC_ALREADY_EXISTS, or
// UNKNOWN_TOPIC_OR_PARTITION for a topic it has just deleted). A change
// opens or closes a log per local partition, each fsynced, so a topic of
// 1,000 partitions takes seconds, and longer on a loaded machine.
//
// The changes of one request run in order on one goroutine, counted in the
// server's WaitGroup so that Close waits for it, under a context that ends
// only when the server stops: the client may close its connection once
// answered, and that must not cut a change in half. At most
// maxLateTopicChanges requests at a time may be answered before their
// changes are done; past that a request waits for its changes, as if it had
// no timeout, so that clients repeating timed-out requests cannot pile up
// goroutines (the agent makes topic changes one at a time anyway).
//
// Unlike Kafka, a timeout_ms of 0 or less waits for the changes to finish
// (Kafka answers at once, before the change is done).

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxLateTopicChanges is the most requests at a time whose changes may go
// on after they were answered REQUEST_TIMED_OUT.
const maxLateTopicChanges = 16

// topicChange is one topic's change in a request.
type topicChange struct {
	topic string
	// do makes the change. Results other than the error go to variables
	// the closure owns, which the handler reads only for a change that
	// runTopicChanges reports done.
	do func(ctx context.Context) error
}

// errChangeGoesOn answers a change still going on at the deadline.
var errChangeGoesOn = reqErrorf(kerr.RequestTimedOut, "the change outlasted the request's timeout and goes on; Metadata shows it once done")

// runTopicChanges makes changes, in order, on a goroutine of their own, and
// waits for them until timeoutMillis has passed (until they are done if it
// is 0 or less, or if maxLateTopicChanges other requests may already leave
// changes going on). It returns each change's error; changes still going
// on then get errChangeGoesOn, and their errors are logged when they end.
func (s *Server) runTopicChanges(timeoutMillis int32, changes []topicChange) []error {
	if len(changes) == 0 {
		return nil
	}
	var (
		mu   sync.Mutex
		errs = make([]error, len(changes))
		done int  // changes [0, done) have returned
		late bool // answered before done: errors are logged, not answered
	)
	// A slot lets this request be answered before its changes are done;
	// the goroutine gives it back when they are.
	early := timeoutMillis > 0
	if early && s.lateTopicChanges.Add(1) > maxLateTopicChanges {
		s.lateTopicChanges.Add(-1)
		early = false
	}
	finished := make(chan struct{})
	ctx, cancel := s.connContext() // ends when the server stops
	// The caller runs on a connection goroutine, which the WaitGroup
	// counts, so Close cannot be past Wait here.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer close(finished)
		if early {
			defer s.lateTopicChanges.Add(-1)
		}
		for i, c := range changes {
			err := c.do(ctx)
			mu.Lock()
			errs[i], done = err, i+1
			answered := late
			mu.Unlock()
			if answered && err != nil {
				s.logger.Warn("topic change failed after its request timed out", "topic", c.topic, "err", err)
			}
		}
	}()
	if early {
		timer := time.NewTimer(time.Duration(timeoutMillis) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-finished:
		case <-timer.C:
		}
	} else {
		<-finished
	}
	mu.Lock()
	defer mu.Unlock()
	late = done < len(changes)
	out := make([]error, len(changes))
	copy(out, errs[:done])
	var going []string
	for i := done; i < len(changes); i++ {
		out[i] = errChangeGoesOn
		going = append(going, changes[i].topic)
	}
	if late {
		s.logger.Info("topic changes outlasted their request's timeout; answered REQUEST_TIMED_OUT, going on", "topics", going, "timeout_ms", timeoutMillis)
	}
	return out
}
