package abuse

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestUnreadAnswerIsDropped: a client that asks for a big Fetch answer and
// never reads it must not pin the answer, and the goroutine writing it,
// for as long as it keeps the connection open. With
// --connections-max-idle 2s, the agent gives up on the answer and closes
// the connection: the client, reading at last, finds the answer cut short.
func TestUnreadAnswerIsDropped(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--connections-max-idle", "2s"}})
	fillBigTopic(t, a.Addr(), "unread")
	c, err := dial(a.Addr(), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = -1, 0, 1, 64<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "unread"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 0, 0, 64<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	if _, err := c.Write(frame(f, 11, 1)); err != nil {
		t.Fatal(err)
	}
	// Wait, without reading, until the agent has closed its end.
	pid := a.PID()
	held, err := agentHasConnFrom(pid, c.LocalAddr())
	if err != nil || !held {
		t.Fatalf("the agent holds no connection from %v (%v)", c.LocalAddr(), err)
	}
	var lastErr error
	closed := waitFor(60*time.Second, func() bool {
		held, lastErr = agentHasConnFrom(pid, c.LocalAddr())
		return lastErr == nil && !held
	})
	if !closed {
		t.Fatalf("the agent still holds the never-read connection after 60s (%v)", lastErr)
	}
	// Now read: part of the answer, then the end of the stream.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read the answer's size: %v", err)
	}
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection did not end after the agent closed it: %v", err)
	}
	want := int64(binary.BigEndian.Uint32(size[:]))
	t.Logf("answer of %d bytes cut after %d", want, n)
	if n >= want {
		t.Fatalf("read the whole answer (%d of %d bytes): the agent never gave up on it", n, want)
	}
}
