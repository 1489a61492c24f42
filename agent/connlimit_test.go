package agent

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// TestMaxConnectionsPerIPLeavesOthersServed: with 127.0.0.1 at its
// --max-connections-per-ip, its next connection is closed at once, while
// a client from 127.0.0.2 (loopback is a /8 on Linux) still creates a
// topic, produces and consumes.
func TestMaxConnectionsPerIPLeavesOthersServed(t *testing.T) {
	dir := t.TempDir()
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	cfg.Kafka.MaxConnectionsPerIP = 8 // room for the two clients below, about three connections each
	a := start(t, cfg, nil)
	addr := a.KafkaAddr().String()
	dialFrom := func(ctx context.Context, ip, host string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return d.DialContext(ctx, "tcp4", host)
	}
	answered := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(kafkawire.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1, "")); err != nil {
			return false
		}
		_, err := kafkawire.ReadFrame(c, 1<<20)
		return err == nil
	}
	for i := range 9 {
		c, err := dialFrom(t.Context(), "127.0.0.1", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, want := answered(c), i < 8; got != want {
			t.Fatalf("connection %d from 127.0.0.1: served %v, want %v (limit 8)", i, got, want)
		}
	}

	from2 := kgo.Dialer(func(ctx context.Context, _, host string) (net.Conn, error) {
		return dialFrom(ctx, "127.0.0.2", host)
	})
	producer := a.client(t, from2, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, producer, "other-host", 1, nil)
	sent := produceValues(t, producer, "other-host", 0, 20)
	cl := a.client(t, from2, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"other-host": {0: kgo.NewOffset().At(0)}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got int
	for got < len(sent) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records from 127.0.0.2: %v", got, len(sent), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != string(sent[got]) {
				t.Fatalf("record %d: %q, want %q", got, r.Value, sent[got])
			}
			got++
		})
	}
}
