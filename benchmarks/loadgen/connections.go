package loadgen

// Idle connections (Config.Connections): clients that are connected but
// have little to say, held open besides the producers and the consumer,
// so that a run shows whether a server keeps its throughput and latency
// while it holds many of them.
//
// What 1,000 mostly idle Kafka clients look like: application instances
// whose client connected, asked ApiVersions and Metadata, and then sends
// little. A producer with nothing to send refreshes its metadata every
// metadata.max.age.ms (5 min); a consumer-group member heartbeats every
// heartbeat.interval.ms (3 s). A run lasts seconds, in which a 5-minute
// refresh would never come, so each connection sends a Metadata request
// for the benchmark topic every Config.ConnectionInterval, 3 s by default
// (the heartbeat's cadence): every connection is read, answered and kept
// alive during the run instead of only parked, at a cost (1,000 / 3 s =
// 333 requests/s) small next to the records. Metadata and not Heartbeat,
// because every Kafka server answers Metadata without group state; 1,000
// group members would make the run about their rebalance.
//
// Each Kafka connection is raw TCP speaking kmsg, not a franz-go client:
// a client per connection would bring its own goroutines, metadata
// refreshes and connection reaping into the load generator, which shares
// the machine's cores with the server it measures.
//
// For JetStream each is a NATS connection (CONNECT, then PING/PONG, as
// nats.Connect does) that sends a PING and waits for its PONG every
// interval: nats.go's own keep-alive (every 2 minutes by default) and the
// only traffic an idle NATS client makes.
//
// A connection that fails (refused, closed by the server, an answer that
// is an error) stays closed and counts once in the run's errors: a server
// that drops idle clients is a finding, not something to retry around.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

const (
	// maxConnections bounds Config.Connections: all of them go from one
	// loopback address to one port, and Linux's default ephemeral port
	// range (32768-60999) holds about 28,000.
	maxConnections = 20000
	// idleDialParallel is how many idle connections are opened at once.
	idleDialParallel = 32
	// maxIdleAnswerBytes bounds an answer an idle connection reads: a
	// Metadata answer for one topic of a few thousand partitions fits.
	maxIdleAnswerBytes = 4 << 20
	// fileSlack is room for the files a process opens besides the
	// connections (logs, segments, pipes) while they are held.
	fileSlack = 64
	// idleClientID names the idle connections in the server's logs.
	idleClientID = "strata-bench-idle"
)

// idleConn is one idle client's connection.
type idleConn interface {
	// request sends one cheap request and reads its answer.
	request(ctx context.Context) error
	// close closes the connection; a request in progress returns an error.
	close()
}

// idlePool holds the idle connections and the goroutines that send their
// requests. stop ends them.
type idlePool struct {
	n        int
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	requests atomic.Int64 // answered periodic requests

	mu     sync.Mutex // guards conns, failed, first
	conns  []idleConn
	failed int
	first  error
}

// openIdle opens n connections with dial, at most idleDialParallel at a
// time, then starts each one's requests, every interval (none if 0). The
// connections' first requests are spread evenly over one interval, so
// they do not all come at once. A connection that fails to open counts
// as failed; openIdle itself fails only if ctx ends.
func openIdle(ctx context.Context, n int, interval time.Duration, dial func(ctx context.Context, i int) (idleConn, error)) (*idlePool, error) {
	p := &idlePool{n: n, conns: make([]idleConn, n)}
	sem := make(chan struct{}, idleDialParallel)
	var opening sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		opening.Go(func() {
			defer func() { <-sem }()
			c, err := dial(ctx, i)
			if err != nil {
				p.fail(fmt.Errorf("open: %w", err))
				return
			}
			p.mu.Lock()
			p.conns[i] = c
			p.mu.Unlock()
		})
	}
	opening.Wait()
	if err := ctx.Err(); err != nil {
		p.closeAll()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	start := time.Now()
	for i, c := range p.conns {
		if c == nil || interval <= 0 {
			continue
		}
		first := start.Add(time.Duration(i) * interval / time.Duration(n))
		p.wg.Go(func() { p.loop(runCtx, c, first, interval) })
	}
	return p, nil
}

// loop sends c's requests at first, first+interval, ... until ctx ends or
// a request fails.
func (p *idlePool) loop(ctx context.Context, c idleConn, next time.Time, interval time.Duration) {
	for {
		if sleep(ctx, time.Until(next)) != nil {
			return
		}
		if err := c.request(ctx); err != nil {
			if ctx.Err() == nil {
				p.fail(err)
			}
			return
		}
		p.requests.Add(1)
		next = next.Add(interval)
	}
}

func (p *idlePool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed++
	if p.first == nil {
		p.first = err
	}
}

func (p *idlePool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if c != nil {
			c.close()
		}
	}
}

// stop ends the requests, closes every connection and notes in res how
// many requests were answered and, as one error, how many connections
// failed.
func (p *idlePool) stop(res *Result) {
	p.cancel()
	// Closing after the cancel: a request the close interrupts is not a
	// failure.
	p.closeAll()
	p.wg.Wait()
	res.IdleRequests = p.requests.Load()
	if p.failed > 0 {
		res.noteError(fmt.Errorf("idle connections: %d of %d failed, the first: %w", p.failed, p.n, p.first))
	}
}

// openIdleKafka opens cfg.Connections idle Kafka connections to target,
// spread over its seeds, each asking about topic.
func openIdleKafka(ctx context.Context, target Target, topic string, cfg Config) (*idlePool, error) {
	if securityOf(target).Enabled() {
		// They speak raw kmsg over TCP (kafkawire), with no TLS or SASL.
		return nil, fmt.Errorf("%s: --connections over TLS or SASL is not supported", target.System())
	}
	if err := checkFileLimits(target, cfg.Connections); err != nil {
		return nil, err
	}
	seeds := target.Seeds()
	return openIdle(ctx, cfg.Connections, cfg.ConnectionInterval, func(ctx context.Context, i int) (idleConn, error) {
		return dialKafkaIdle(ctx, seeds[i%len(seeds)], topic, cfg.DrainTimeout)
	})
}

// openIdleNATS opens cfg.Connections idle NATS connections to target.
func openIdleNATS(ctx context.Context, target *JetStream, cfg Config) (*idlePool, error) {
	if err := checkFileLimits(target, cfg.Connections); err != nil {
		return nil, err
	}
	return openIdle(ctx, cfg.Connections, cfg.ConnectionInterval, func(ctx context.Context, _ int) (idleConn, error) {
		nc, err := nats.Connect(target.URL(), nats.Name(idleClientID), nats.Timeout(cfg.DrainTimeout),
			// A dropped connection must fail the next PING, not be
			// replaced behind the harness's back.
			nats.NoReconnect())
		if err != nil {
			return nil, err
		}
		return &natsIdleConn{nc: nc, timeout: cfg.DrainTimeout}, nil
	})
}

// natsIdleConn is an idle NATS client: a PING and its PONG per request.
type natsIdleConn struct {
	nc      *nats.Conn
	timeout time.Duration
}

func (c *natsIdleConn) request(context.Context) error { return c.nc.FlushTimeout(c.timeout) }
func (c *natsIdleConn) close()                        { c.nc.Close() }

// kafkaIdleConn is an idle Kafka client on one TCP connection: ApiVersions
// and Metadata when it opens, then Metadata for its topic per request.
// Requests are sent one at a time, by one goroutine.
type kafkaIdleConn struct {
	conn    *kafkawire.Conn
	topic   string
	timeout time.Duration
	// metadataVersion is the highest Metadata version both kmsg and the
	// server speak, as ApiVersions said.
	metadataVersion int16
}

// dialKafkaIdle connects to addr and makes the requests a client makes
// when it connects: ApiVersions, then Metadata.
func dialKafkaIdle(ctx context.Context, addr, topic string, timeout time.Duration) (_ *kafkaIdleConn, err error) {
	cfg := kafkawire.DefaultConfig()
	cfg.ClientID = idleClientID
	cfg.MaxResponseBytes = maxIdleAnswerBytes
	dctx, cancel := context.WithTimeout(ctx, timeout)
	conn, err := kafkawire.Dial(dctx, addr, cfg)
	cancel()
	if err != nil {
		return nil, err
	}
	c := &kafkaIdleConn{conn: conn, topic: topic, timeout: timeout}
	defer func() {
		if err != nil {
			conn.Close()
		}
	}()
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = idleClientID, "1"
	vresp := kmsg.NewPtrApiVersionsResponse()
	if err := c.roundTrip(ctx, versions, vresp); err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	if err := kerr.ErrorForCode(vresp.ErrorCode); err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	c.metadataVersion = -1
	for _, k := range vresp.ApiKeys {
		if k.ApiKey == kmsg.Metadata.Int16() {
			c.metadataVersion = min(k.MaxVersion, kmsg.NewPtrMetadataRequest().MaxVersion())
		}
	}
	if c.metadataVersion < 0 {
		return nil, errors.New("api versions: the server lists no Metadata")
	}
	if err := c.request(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// request asks for the topic's metadata; an error for the topic fails it.
func (c *kafkaIdleConn) request(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(c.metadataVersion)
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(c.topic)
	req.Topics = append(req.Topics, t)
	resp := kmsg.NewPtrMetadataResponse()
	if err := c.roundTrip(ctx, req, resp); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == c.topic {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return fmt.Errorf("metadata: topic %s: %w", c.topic, err)
			}
			return nil
		}
	}
	return fmt.Errorf("metadata: topic %s missing from the answer", c.topic)
}

// roundTrip writes req and reads its answer into resp, within the
// connection's timeout (or ctx's deadline, if sooner).
func (c *kafkaIdleConn) roundTrip(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.conn.DoInto(ctx, req, resp)
}

func (c *kafkaIdleConn) close() { c.conn.Close() }

// processTarget is a target whose server processes the harness started.
type processTarget interface {
	pids() []int
}

func (s *Strata) pids() []int        { return []int{s.PID()} }
func (c *StrataCluster) pids() []int { return c.PIDs() }
func (p *peerProcess) pids() []int   { return []int{p.PID()} }

// checkFileLimits makes sure that this process, and every server process
// the harness started for target, may open n more files than it has open
// now. Go raises a process's soft RLIMIT_NOFILE to its hard limit at
// start-up (since Go 1.19), and every server here is a Go program, so
// this fails only where the hard limit is low; it fails before the run,
// with the limit named, instead of in the middle of it with "too many open
// files". Where /proc is missing, the servers are not checked.
func checkFileLimits(target Target, n int) error {
	own := n
	if _, inproc := target.(*Kfake); inproc {
		own *= 2 // both ends of every connection are in this process
	}
	if err := raiseFileLimit(own); err != nil {
		return err
	}
	pt, ok := target.(processTarget)
	if !ok {
		return nil
	}
	for _, pid := range pt.pids() {
		open, soft, err := processFiles(pid)
		if err != nil {
			continue
		}
		if soft >= 0 && open+n+fileSlack > soft {
			return fmt.Errorf("--connections %d: %s pid %d has %d files open and may open %d (RLIMIT_NOFILE); raise the hard limit (ulimit -Hn)",
				n, target.System(), pid, open, soft)
		}
	}
	return nil
}

// processFiles reads how many files process pid has open and its soft
// open-file limit (-1: unlimited) from /proc.
func processFiles(pid int) (open, soft int, err error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		if f[0] == "unlimited" {
			return len(fds), -1, nil
		}
		soft, err := strconv.Atoi(f[0])
		return len(fds), soft, err
	}
	return 0, 0, fmt.Errorf("/proc/%d/limits: no open-file limit", pid)
}
