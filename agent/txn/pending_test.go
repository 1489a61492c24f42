package txn

import (
	"context"
	"testing"
	"time"
)

// heldLog is a memLog whose appends wait while held is open.
type heldLog struct {
	*memLog
	held    chan struct{}
	started chan struct{} // one send per append that waits
}

func (l *heldLog) Append(ctx context.Context, raw []byte) error {
	if l.held != nil {
		l.started <- struct{}{}
		<-l.held
	}
	return l.memLog.Append(ctx, raw)
}

// TestAppendReleasesTheCoordinator: while one transactional id's state
// is being appended (acks=all can take a replication round trip), the
// coordinator serves another id of the partition, as Kafka's does with
// its per-id pending state; the first id's write then lands.
func TestAppendReleasesTheCoordinator(t *testing.T) {
	f := newFixture(t)
	l := &heldLog{memLog: f.log}
	cfg := f.c.cfg
	f.c.Close()
	c, err := Load(ctx, 0, l, cfg, f.c.logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	l.held, l.started = make(chan struct{}), make(chan struct{}, 2)
	first := make(chan error, 1)
	go func() {
		_, _, err := c.InitProducerID(ctx, "slow", time.Minute, -1, -1)
		first <- err
	}()
	<-l.started // "slow"'s record is being appended
	other := make(chan error, 1)
	go func() {
		_, _, err := c.InitProducerID(ctx, "fast", time.Minute, -1, -1)
		other <- err
	}()
	select {
	case <-l.started:
	case <-time.After(20 * time.Second):
		close(l.held)
		t.Fatal("another id's InitProducerId did not reach the log while the first id's append was under way")
	}
	if _, ok := c.Describe("slow"); ok {
		t.Error("an id whose first state is not durable yet is described")
	}
	close(l.held) // both appends go on; "fast"'s had begun while "slow"'s waited
	for _, ch := range []chan error{first, other} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"slow", "fast"} {
		if _, ok := c.Describe(id); !ok {
			t.Fatalf("%s unknown after its init", id)
		}
	}
}
