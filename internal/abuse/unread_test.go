package abuse

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
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
	// The answer must not fit in the agent's socket send buffer, or the
	// agent's write would finish whether the client reads or not.
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			if max, err := strconv.Atoi(f[2]); err == nil && max >= bigTopicBytes {
				t.Skipf("net.ipv4.tcp_wmem allows %d-byte send buffers; the %d-byte answer could sit in one", max, bigTopicBytes)
			}
		}
	}
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
	// Wait until the agent has accepted the connection (the kernel
	// completes the handshake before the agent accepts), then, without
	// reading, until it has closed its end.
	pid := a.PID()
	var held bool
	var lastErr error
	if !waitFor(30*time.Second, func() bool {
		held, lastErr = agentHasConnFrom(pid, c.LocalAddr())
		return lastErr == nil && held
	}) {
		t.Fatalf("the agent holds no connection from %v after 30s (%v)", c.LocalAddr(), lastErr)
	}
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
