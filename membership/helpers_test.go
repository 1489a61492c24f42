package membership

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/freeport"
	"github.com/strata-streaming/strata/internal/testwait"
)

// waitTimeout bounds every wait in the cluster tests. Loopback timings
// detect a failure in about a second; the margin is for -race on two cores.
const waitTimeout = 15 * time.Second

// syncBuffer collects a test's log lines; they are printed only if it fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cluster starts members on 127.0.0.1 with kernel-chosen ports and closes
// them when the test ends.
type cluster struct {
	t      *testing.T
	logs   *syncBuffer
	logger *slog.Logger
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	logs := &syncBuffer{}
	c := &cluster{t: t, logs: logs,
		logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	// Registered first, so it runs after every member is closed.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	return c
}

func (c *cluster) config(seeds ...string) Config {
	cfg := LoopbackConfig()
	cfg.Join = seeds
	cfg.Logger = c.logger
	return cfg
}

// member is a started Membership whose events are collected.
type member struct {
	*Membership
	mu       sync.Mutex
	events   []Event
	finished chan struct{} // closed when Events is closed
}

func (c *cluster) start(id int32, seeds ...string) *member {
	c.t.Helper()
	return c.startWith(c.config(seeds...), id)
}

func (c *cluster) startWith(cfg Config, id int32) *member {
	c.t.Helper()
	if cfg.Logger == c.logger {
		// Every member logs into one buffer: say whose line it is.
		cfg.Logger = c.logger.With("self", id)
	}
	m, err := Start(cfg, testSelf(id))
	if err != nil {
		c.t.Fatalf("start agent %d: %v", id, err)
	}
	tm := &member{Membership: m, finished: make(chan struct{})}
	go func() {
		defer close(tm.finished)
		for e := range m.Events() {
			tm.mu.Lock()
			tm.events = append(tm.events, e)
			tm.mu.Unlock()
		}
	}()
	c.t.Cleanup(tm.stop)
	return tm
}

// stop closes the member and waits for its event collector.
func (m *member) stop() {
	_ = m.Close()
	<-m.finished
}

func testSelf(id int32) Member {
	return Member{
		ID:        id,
		KafkaAddr: fmt.Sprintf("127.0.0.1:%d", 19092+id),
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", 19644+id),
		Rack:      fmt.Sprintf("rack-%d", id%2),
		State:     StateJoining,
	}
}

// findEvent returns the first collected event that matches.
func (m *member) findEvent(match func(Event) bool) (Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if match(e) {
			return e, true
		}
	}
	return Event{}, false
}

func (m *member) countEvents(match func(Event) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if match(e) {
			n++
		}
	}
	return n
}

// waitEvent polls until m has collected an event that matches.
func (m *member) waitEvent(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	var e Event
	waitFor(t, fmt.Sprintf("agent %d: %s", m.Self().ID, what), func() bool {
		var ok bool
		e, ok = m.findEvent(match)
		return ok
	})
	return e
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, waitTimeout, cond, "%s", what)
}

func isEvent(t EventType, name string) func(Event) bool {
	return func(e Event) bool { return e.Type == t && e.Member.Name == name }
}

// memberNames returns the names in m's view, in Members order.
func memberNames(m *member) []string {
	var names []string
	for _, x := range m.Members() {
		names = append(names, x.Name)
	}
	return names
}

// freePort returns a port free for both TCP and UDP on 127.0.0.1, for a
// member that must start later on a port known in advance.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Loopback(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
