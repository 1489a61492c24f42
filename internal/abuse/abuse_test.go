package abuse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testagent"
)

const (
	// seedEnv overrides the random seed of TestProtocolAbuse.
	seedEnv = "STRATA_ABUSE_SEED"

	// maxRSS bounds the agent's peak resident memory over the whole abuse
	// run. What the agent may rightly hold at the worst moment is the
	// slow-reader phase: each connection handles one request at a time,
	// so it holds one Fetch answer of bigTopicBytes, read into memory and
	// encoded once more to be written (16 MiB per reader, 128 MiB in
	// all), on top of a resting agent of about 35 MiB. The garbage
	// collector may let the heap reach twice what is live, which makes
	// about 330 MiB; the bound leaves room above that. What the agent must
	// not hold is memory its clients merely claim: the truncated-frame
	// phase alone claims 5.8 GiB. It is a memory bound, not a timing one.
	maxRSS = 512 << 20

	idleConns        = 2000 // wanted; fewer if the open-file limits are low
	randomWorkers    = 16
	hugePrefixWorker = 8
	truncatedConns   = 300
	slowReaders      = 8
	bigTopicBytes    = 8 << 20
	// minProgress is how many records the good clients must have
	// acknowledged, and read, during each phase.
	minProgress = 200
	// goodRate is the good producer's records per second: steady traffic,
	// leaving the two cores mostly to the abuse.
	goodRate = 1000
	// phaseHold is the least time each phase's abuse lasts, so that slow
	// readers read a few KiB and the good clients run many requests
	// through it; a phase ends once it has lasted this long and the good
	// clients have made minProgress.
	phaseHold = 3 * time.Second
	// settleSlack is how far above the baseline goroutines and open files
	// may stay once every abusive connection is closed: the good clients
	// may open a connection or start a request in between.
	settleSlack = 25
)

// abuseEnv is what a phase needs.
type abuseEnv struct {
	addr     string
	seed     uint64
	idle     int
	bigTopic string
}

// phaseResult is what a phase reports: connections it opened, anything
// worth printing, and a failure.
type phaseResult struct {
	conns int64
	note  string
	err   error
}

type phase struct {
	name string
	// run abuses the agent until ctx ends. It calls ready once the abuse
	// is in full swing (every connection open, every worker past its
	// first round), so that progress measured after ready is progress
	// made under abuse.
	run func(ctx context.Context, env *abuseEnv, ready func()) phaseResult
}

// TestProtocolAbuse: see the package doc.
func TestProtocolAbuse(t *testing.T) { protocolAbuse(t, false) }

// TestSASLListenerAbuse sends the same bad input to a SASL_PLAINTEXT
// listener, where nothing but ApiVersions, SaslHandshake and
// SaslAuthenticate is taken before a client authenticates and frames are
// capped at --sasl-server-max-receive-size, and adds garbage during
// authentication and oversized SASL tokens (sasl_test.go). The good
// clients work on the plaintext listener meanwhile. The idle and slow-reader
// phases do not depend on the listener and are left to TestProtocolAbuse.
func TestSASLListenerAbuse(t *testing.T) { protocolAbuse(t, true) }

func protocolAbuse(t *testing.T, sasl bool) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	t.Logf("seed %d (%s=%d repeats it)", seed, seedEnv, seed)

	ownLimit := raiseOpenFileLimit(t)
	// Every phase connects from 127.0.0.1, and the idle phase holds up to
	// idleConns at once: the per-address limit (1000 by default, tested in
	// agent/kafka) would refuse them before the agent's bounds are tried.
	opts := testagent.Options{ExtraArgs: []string{
		"--max-connections-per-ip", strconv.Itoa(idleConns + 1000)}}
	if sasl {
		opts.ExtraListeners = []string{"SASL_PLAINTEXT"}
		opts.ExtraArgs = append(opts.ExtraArgs, "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]")
	}
	a := testagent.Start(t, opts)
	pid := a.PID()
	agentLimit, err := openFileLimit(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Keep 500 descriptors for everything else on either side.
	idle := min(idleConns, ownLimit-500, agentLimit-500)
	if idle < 100 {
		t.Fatalf("open-file limits too low for the idle-connection phase: test %d, agent %d", ownLimit, agentLimit)
	}
	t.Logf("open-file limits: test process %d, agent %d; idle connections: %d", ownLimit, agentLimit, idle)

	env := &abuseEnv{addr: a.Addr(), seed: seed, idle: idle, bigTopic: "abuse-big"}
	ensureInternalTopics(t, a.Addr())
	phases := []phase{
		{"random bytes", randomBytes},
		{"truncated frames", truncatedFrames},
		{"huge length prefixes", hugePrefixes},
	}
	if sasl {
		env.addr = a.ListenerAddr("SASL_PLAINTEXT")
		phases = append(phases, phase{"garbage in SASL", saslGarbage}, phase{"oversized SASL tokens", saslOversized})
	} else {
		fillBigTopic(t, a.Addr(), env.bigTopic)
		phases = append(phases, phase{"idle connections", idleConnections}, phase{"slow readers", slowReading})
	}
	w := startWorkload(t, a.Addr(), "abuse-good", 3, nil, 100, goodRate)
	if !waitFor(60*time.Second, func() bool { return w.ackedN.Load() >= minProgress && w.readN.Load() >= minProgress }) {
		t.Fatalf("good clients made no progress before any abuse: %d acknowledged, %d read", w.ackedN.Load(), w.readN.Load())
	}
	base := mustSample(t, pid, a.HTTPAddr())
	t.Logf("baseline: %v", base)

	peakHeap := base.heapInuse
	for _, ph := range phases {
		ctx, cancel := context.WithCancel(context.Background())
		readyc := make(chan struct{})
		var once sync.Once
		var res phaseResult
		done := make(chan struct{})
		go func() {
			defer close(done)
			res = ph.run(ctx, env, func() { once.Do(func() { close(readyc) }) })
		}()
		select {
		case <-readyc:
		case <-done:
			// The progress below would then be measured without abuse.
			select {
			case <-readyc:
			default:
				t.Errorf("%s: the phase ended before its abuse was in place", ph.name)
			}
		case <-time.After(2 * time.Minute):
			t.Errorf("%s: abuse not in place within 2m", ph.name)
		}
		acked0, read0 := w.ackedN.Load(), w.readN.Load()
		progressed := waitFor(60*time.Second, func() bool {
			return w.ackedN.Load() >= acked0+minProgress && w.readN.Load() >= read0+minProgress
		})
		// Hold the abuse a little longer if progress came quickly.
		hold := time.NewTimer(phaseHold)
		select {
		case <-hold.C:
		case <-done:
			hold.Stop()
		}
		during, serr := takeSample(pid, a.HTTPAddr())
		acked, read := w.ackedN.Load()-acked0, w.readN.Load()-read0
		cancel()
		<-done
		if serr != nil {
			t.Errorf("%s: sample agent: %v", ph.name, serr)
		}
		peakHeap = max(peakHeap, during.heapInuse)
		t.Logf("%-20s conns=%-6d acked=%-5d read=%-5d agent: %v %s", ph.name, res.conns, acked, read, during, res.note)
		if res.conns == 0 {
			t.Errorf("%s: no abusive connection was made", ph.name)
		}
		if !progressed {
			t.Errorf("%s: good clients acknowledged %d and read %d records in 60s under abuse, want %d each", ph.name, acked, read, minProgress)
		}
		if res.err != nil {
			t.Errorf("%s: %v", ph.name, res.err)
		}
	}

	agentAnswers(t, a.Addr(), w.topic)
	w.finish(t)

	// Every abusive connection is closed: what the agent held for them
	// must go. The wait is bounded; nothing here is timed.
	var after sample
	settled := waitFor(30*time.Second, func() bool {
		s, err := takeSample(pid, a.HTTPAddr())
		if err != nil {
			return false
		}
		after = s
		return s.goroutines <= base.goroutines+settleSlack && s.fds <= base.fds+settleSlack
	})
	t.Logf("after: %v", after)
	if !settled {
		t.Errorf("agent did not return near its baseline within 30s: goroutines %d (baseline %d), open files %d (baseline %d), slack %d\nagent goroutines:\n%s",
			after.goroutines, base.goroutines, after.fds, base.fds, settleSlack, goroutineDump(a.HTTPAddr()))
	}
	t.Logf("max RSS (VmHWM) %s, bound %s; peak sampled Go heap in use %s", mib(after.hwm), mib(maxRSS), mib(peakHeap))
	if after.hwm > maxRSS {
		t.Errorf("agent peak RSS %s above the %s bound", mib(after.hwm), mib(maxRSS))
	}
}

// fillBigTopic creates topic with one partition holding about
// bigTopicBytes of incompressible records, for the slow readers.
func fillBigTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopic(t, addr, topic)
	rng := rand.New(rand.NewPCG(1, 2))
	const recordBytes = 64 << 10
	var recs []*kgo.Record
	for n := 0; n < bigTopicBytes; n += recordBytes {
		v := make([]byte, recordBytes)
		for i := 0; i < len(v); i += 8 {
			binary.LittleEndian.PutUint64(v[i:], rng.Uint64())
		}
		recs = append(recs, &kgo.Record{Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("fill %s: %v", topic, err)
	}
}

// agentAnswers fails t unless a new client gets ApiVersions and Metadata
// answered without error.
func agentAnswers(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(av.ErrorCode)
	}
	if err != nil {
		t.Errorf("ApiVersions after abuse: %v", err)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mr, err := md.RequestWith(ctx, cl)
	if err == nil && len(mr.Topics) != 1 {
		err = fmt.Errorf("%d topics in answer", len(mr.Topics))
	}
	if err == nil {
		err = kerr.ErrorForCode(mr.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Errorf("Metadata after abuse: %v", err)
	}
}

// ensureInternalTopics asks for a group coordinator and a transaction
// coordinator until the agent names each, so that __consumer_offsets and
// __transaction_state (50 partitions each, with their own goroutines and
// files) exist before the baseline is taken: random bytes that decode as
// a group or transaction request would otherwise create one during the
// abuse, and the agent would rightly not come back to the baseline.
func ensureInternalTopics(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, keyType := range []int8{0, 1} { // group, transaction
		var last error
		if !waitFor(60*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = keyType
			req.CoordinatorKey = "abuse"
			req.CoordinatorKeys = []string{"abuse"}
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				code := resp.ErrorCode
				if len(resp.Coordinators) > 0 {
					code = resp.Coordinators[0].ErrorCode
				}
				err = kerr.ErrorForCode(code)
			}
			last = err
			return err == nil
		}) {
			t.Fatalf("no coordinator of key type %d within 60s: %v", keyType, last)
		}
	}
}

// workers runs n copies of f until ctx ends and calls ready once each has
// finished one round. f returns whether its round opened a connection.
func workers(ctx context.Context, n int, ready func(), f func(worker int, rng *rand.Rand) (bool, error), seed uint64) phaseResult {
	var conns atomic.Int64
	var firstRound sync.WaitGroup
	var wg sync.WaitGroup
	errc := make(chan error, n)
	firstRound.Add(n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for round := 0; ctx.Err() == nil; round++ {
				opened, err := f(i, rng)
				if opened {
					conns.Add(1)
				}
				if round == 0 {
					firstRound.Done()
				}
				if err != nil {
					errc <- err
					if round > 0 {
						return
					}
					// The first round must still count as done.
					for ctx.Err() == nil {
						<-ctx.Done()
					}
					return
				}
			}
		}()
	}
	go func() { firstRound.Wait(); ready() }()
	wg.Wait()
	var res phaseResult
	res.conns = conns.Load()
	select {
	case res.err = <-errc:
	default:
	}
	return res
}

// randomBytes: connections that send random bytes, some behind a
// plausible size, some behind a real header of a random API and version,
// then close.
func randomBytes(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	return workers(ctx, randomWorkers, ready, func(_ int, rng *rand.Rand) (bool, error) {
		c, err := dial(env.addr, 0)
		if err != nil {
			return false, fmt.Errorf("dial: %w", err)
		}
		defer c.Close()
		body := make([]byte, 1+rng.IntN(4096))
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		var msg []byte
		switch rng.IntN(3) {
		case 0: // nothing but noise, the size included
			msg = body
		case 1: // a size that matches, then noise
			msg = binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			msg = append(msg, body...)
		default: // a header a decoder will take, then noise
			hdr := binary.BigEndian.AppendUint16(nil, uint16(rng.IntN(75)))
			hdr = binary.BigEndian.AppendUint16(hdr, uint16(rng.IntN(18)))
			hdr = binary.BigEndian.AppendUint32(hdr, rng.Uint32())
			hdr = append(hdr, 0xFF, 0xFF) // null client id
			msg = binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(body)))
			msg = append(append(msg, hdr...), body...)
		}
		// The agent may close while we write; that is its right.
		c.Write(msg)
		// Read what comes back (an answer, or the close) for a moment, so
		// that the agent handles the bytes before the close.
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		return true, nil
	}, env.seed)
}

// truncatedFrames: frames whose size claims up to the largest request
// allowed, followed by 10 bytes. Half close at once, half hold the
// connection open until the phase ends, so the agent waits on them.
func truncatedFrames(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	claims := []uint32{100, 4 << 10, 1 << 20, 16 << 20, 64 << 20, 100 << 20} // the default limit is 100 MiB
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var res phaseResult
	var claimed int64
	for i := 0; i < truncatedConns && ctx.Err() == nil; i++ {
		c, err := dial(env.addr, 0)
		if err != nil {
			res.err = fmt.Errorf("dial: %w", err)
			break
		}
		res.conns++
		claim := claims[i%len(claims)]
		msg := binary.BigEndian.AppendUint32(nil, claim)
		msg = append(msg, 0, 3, 0, 1, 0, 0, 0, 7, 0xFF, 0xFF) // 10 bytes of a Metadata header
		if _, err := c.Write(msg); err != nil {
			res.err = fmt.Errorf("write truncated frame: %w", err)
			c.Close()
			break
		}
		if i%2 == 0 {
			c.Close()
			continue
		}
		held = append(held, c)
		claimed += int64(claim)
	}
	res.note = fmt.Sprintf("held=%d claimed=%s", len(held), mib(claimed))
	ready()
	<-ctx.Done()
	return res
}

// hugePrefixes: sizes no request may have, or negative ones; the agent
// must close each connection without reading on.
func hugePrefixes(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	sizes := []uint32{0x7FFFFFFF, 1 << 30, 100<<20 + 1, 0xFFFFFFFF, 0x80000000, 0xFFFFFF00, 0}
	return workers(ctx, hugePrefixWorker, ready, func(_ int, rng *rand.Rand) (bool, error) {
		c, err := dial(env.addr, 0)
		if err != nil {
			return false, fmt.Errorf("dial: %w", err)
		}
		defer c.Close()
		size := sizes[rng.IntN(len(sizes))]
		msg := binary.BigEndian.AppendUint32(nil, size)
		msg = append(msg, make([]byte, rng.IntN(64))...)
		c.Write(msg)
		// A generous bound: the agent closes at once, but this machine is
		// shared and the test runs under the race detector.
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 64)
		for {
			_, err := c.Read(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return true, fmt.Errorf("connection with frame size %#x still open after 30s", size)
			}
			if err != nil {
				return true, nil
			}
		}
	}, env.seed)
}

// idleConnections: env.idle connections; half send an ApiVersions and
// read its answer first, as a client that connects and then idles does,
// half never send a byte. All are held until the phase ends.
func idleConnections(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	var res phaseResult
	conns := make([]net.Conn, 0, env.idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < env.idle && ctx.Err() == nil; i++ {
		c, err := dial(env.addr, 0)
		if err != nil {
			res.err = fmt.Errorf("dial idle connection %d: %w", i, err)
			break
		}
		conns = append(conns, c)
		if i%2 == 1 {
			continue
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(frame(kmsg.NewPtrApiVersionsRequest(), 0, int32(i))); err != nil {
			res.err = fmt.Errorf("idle connection %d: ApiVersions: %w", i, err)
			break
		}
		if _, err := kafkawire.ReadFrame(c, 64<<20); err != nil {
			res.err = fmt.Errorf("idle connection %d: ApiVersions answer: %w", i, err)
			break
		}
		c.SetDeadline(time.Time{})
	}
	res.conns = int64(len(conns))
	ready()
	<-ctx.Done()
	return res
}

// slowReading: connections with a 4 KiB receive buffer that pipeline
// three Fetch requests for the whole big topic; half never read, half
// read 1 KiB a second.
func slowReading(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	var res phaseResult
	var wg sync.WaitGroup
	defer wg.Wait()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var readBytes atomic.Int64
	for i := 0; i < slowReaders; i++ {
		c, err := dial(env.addr, 4<<10)
		if err != nil {
			res.err = fmt.Errorf("dial slow reader: %w", err)
			break
		}
		conns = append(conns, c)
		var msg []byte
		for corr := int32(0); corr < 3; corr++ {
			f := kmsg.NewPtrFetchRequest()
			f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = -1, 0, 1, 64<<20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = env.bigTopic
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 0, 0, 64<<20, -1
			ft.Partitions = append(ft.Partitions, fp)
			f.Topics = append(f.Topics, ft)
			msg = append(msg, frame(f, 11, corr)...)
		}
		if _, err := c.Write(msg); err != nil {
			res.err = fmt.Errorf("slow reader: write fetches: %w", err)
			break
		}
		if i%2 == 0 {
			continue // never reads
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			buf := make([]byte, 1<<10)
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				n, err := c.Read(buf)
				readBytes.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	res.conns = int64(len(conns))
	ready()
	<-ctx.Done()
	res.note = fmt.Sprintf("slow-read=%dB", readBytes.Load())
	return res
}
