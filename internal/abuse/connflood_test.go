package abuse

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testagent"
)

const (
	// floodConns is how many Kafka connections the probe opens from one
	// address and holds; before --max-connections-per-ip, 10,000 idle
	// ones were all held and every new client got EOF.
	floodConns = 10000
	// floodIP is the flood's source address: the loopback /8 is all
	// local, and the good clients connect from 127.0.0.1.
	floodIP = "127.0.0.2"
	// floodPerIP is the agent's --max-connections-per-ip (the default,
	// written out so that the bounds below read from it).
	floodPerIP = 1000
	// maxAckGap bounds the longest time the good producer goes without an
	// acknowledgement while the flood lasts: generous for a loaded
	// two-core machine (normal gaps are milliseconds), far below the 10
	// minutes of --connections-max-idle that the flood used to lock
	// clients out for.
	maxAckGap = 5 * time.Second
	// floodGoroutinesPerConn bounds the agent goroutines per held
	// connection (agent/kafka serveConn: one reads requests, one writes
	// answers, one ends the connection when the server stops), so that
	// the flood's cost is the per-address limit's, not the flood's size;
	// floodGoroutineSlack leaves room for the good clients' requests in
	// flight and connections closing. Measured: 3,055 with a baseline of 53.
	floodGoroutinesPerConn = 3
	floodGoroutineSlack    = 100
)

// TestKafkaConnectionFlood opens floodConns Kafka connections from floodIP
// and holds them, while an idempotent acks=all producer and a consumer on
// 127.0.0.1 keep working. The agent must refuse every connection past
// --max-connections-per-ip at once (counted by
// strata_kafka_connections_refused_total{reason="per_ip"}), the good
// producer must never go maxAckGap without an acknowledgement, a new
// client from 127.0.0.1 must be served while the flood is held, and the
// agent's goroutines and peak RSS must stay bounded by what the
// per-address limit admits. Every acknowledged record is read back.
func TestKafkaConnectionFlood(t *testing.T) {
	if own := raiseOpenFileLimit(t); own < floodConns+1000 {
		t.Skipf("open-file limit %d: the flood needs %d", own, floodConns+1000)
	}
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--max-connections-per-ip", strconv.Itoa(floodPerIP)}})
	pid := a.PID()
	w := startWorkload(t, a.Addr(), "flood-good", 1, nil, 100, goodRate)
	if !waitFor(60*time.Second, func() bool { return w.ackedN.Load() >= minProgress && w.readN.Load() >= minProgress }) {
		t.Fatalf("good clients made no progress before the flood: %d acknowledged, %d read", w.ackedN.Load(), w.readN.Load())
	}
	gaps := watchAckGaps(w)
	base := mustSample(t, pid, a.HTTPAddr())
	refused0 := kafkaRefused(t, a.HTTPAddr())
	t.Logf("baseline: %v", base)

	conns, closedAtOnce := flood(t, a.Addr(), floodConns)
	acked0, read0 := w.ackedN.Load(), w.readN.Load()
	progressed := waitFor(60*time.Second, func() bool {
		return w.ackedN.Load() >= acked0+minProgress && w.readN.Load() >= read0+minProgress
	})
	// A client that was not connected before the flood is served during it.
	agentAnswers(t, a.Addr(), w.topic)
	during := mustSample(t, pid, a.HTTPAddr())
	refused := kafkaRefused(t, a.HTTPAddr()) - refused0
	t.Logf("%d connections from %s: %d closed by the agent at once, %d refused (per_ip); acked=%d read=%d; agent: %v",
		len(conns), floodIP, closedAtOnce, int(refused), w.ackedN.Load()-acked0, w.readN.Load()-read0, during)
	for _, c := range conns {
		c.Close()
	}
	if want := float64(floodConns - floodPerIP); refused != want {
		t.Errorf("agent refused %v connections from %s, want %v (all but --max-connections-per-ip %d)", refused, floodIP, want, floodPerIP)
	}
	if closedAtOnce != floodConns-floodPerIP {
		t.Errorf("%d of the flood's connections were closed at once, want %d", closedAtOnce, floodConns-floodPerIP)
	}
	if !progressed {
		t.Errorf("good clients acknowledged %d and read %d records in 60s during the flood, want %d each",
			w.ackedN.Load()-acked0, w.readN.Load()-read0, minProgress)
	}
	if limit := base.goroutines + floodGoroutinesPerConn*floodPerIP + floodGoroutineSlack; during.goroutines > limit {
		t.Errorf("agent runs %d goroutines while %d connections are held from one address, want at most %d", during.goroutines, floodPerIP, limit)
	}

	// Still serving afterwards: the good clients go on producing and
	// consuming.
	acked0, read0 = w.ackedN.Load(), w.readN.Load()
	serving := waitFor(60*time.Second, func() bool {
		return w.ackedN.Load() >= acked0+minProgress && w.readN.Load() >= read0+minProgress
	})
	if !serving {
		t.Errorf("after the flood the good clients acknowledged %d and read %d records in 60s, want %d each",
			w.ackedN.Load()-acked0, w.readN.Load()-read0, minProgress)
	}
	gap := gaps.stop()
	w.finish(t)
	after := mustSample(t, pid, a.HTTPAddr())
	t.Logf("probe %q: 0 bytes sent (%d TCP connections), longest gap between acknowledgements %v (bound %v), peak RSS %s (bound %s), peak goroutines sampled %d, still serves produce and consume: %v",
		"10,000 Kafka connections from one IP", floodConns, gap.Round(time.Millisecond), maxAckGap, mib(after.hwm), mib(maxRSS), during.goroutines, serving)
	if gap > maxAckGap {
		t.Errorf("the good producer went %v without an acknowledgement, want under %v", gap, maxAckGap)
	}
	if after.hwm > maxRSS {
		t.Errorf("agent peak RSS %s above the %s bound", mib(after.hwm), mib(maxRSS))
	}
}

// flood opens n TCP connections from floodIP to addr, 64 at a time, and
// then checks them all at once: it returns the open connections and how
// many of them the agent had already closed (a read ends at once rather
// than waiting out a short deadline).
func flood(t *testing.T, addr string, n int) ([]net.Conn, int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(floodIP)}, Timeout: 10 * time.Second}
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		t.Fatalf("flood from %s: %v", floodIP, err)
	}
	// An idle connection the agent holds sends nothing, so its read times
	// out; one it refused ends in EOF or a reset.
	var closed atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(deadline)
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				closed.Add(1)
			}
			c.SetReadDeadline(time.Time{})
		})
	}
	wg.Wait()
	return conns, int(closed.Load())
}

// kafkaRefused reads strata_kafka_connections_refused_total{reason="per_ip"}.
func kafkaRefused(t *testing.T, httpAddr string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+httpAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Value("strata_kafka_connections_refused_total", "reason", "per_ip")
	return v
}

// ackGaps watches a workload's acknowledgements every 10 ms and keeps the
// longest time between two.
type ackGaps struct {
	stopc   chan struct{}
	done    chan struct{}
	longest time.Duration
}

func watchAckGaps(w *workload) *ackGaps {
	g := &ackGaps{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last, lastAt := w.ackedN.Load(), time.Now()
		for {
			select {
			case <-g.stopc:
				return
			case now := <-tick.C:
				if n := w.ackedN.Load(); n != last {
					last, lastAt = n, now
				}
				g.longest = max(g.longest, now.Sub(lastAt))
			}
		}
	}()
	return g
}

// stop ends the watch and returns the longest gap seen.
func (g *ackGaps) stop() time.Duration {
	close(g.stopc)
	<-g.done
	return g.longest
}
