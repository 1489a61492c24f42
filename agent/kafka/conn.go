package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
)

// errBadRequest closes the connection: the bytes are not a request we can
// answer, so the stream can no longer be trusted.
var errBadRequest = errors.New("kafka: malformed request")

// request is one decoded request with its header.
type request struct {
	key, version  int16
	correlationID int32
	clientID      *string
	msg           kmsg.Request
	remote        string
	// conn is the connection's state; nil in handler tests that build a
	// request by hand.
	conn *connState
	// waited is how long the handler waited for something other than
	// work (a Fetch's long poll), which request_percentage does not count.
	waited time.Duration
}

// connState is what a connection's requests share: its listener and its
// SASL state (sasl.go). Only the connection's reading goroutine touches it.
type connState struct {
	listener Listener
	sasl     saslState
	// closeAfter asks serveConn to close the connection once the current
	// answer is sent (a failed authentication, as Kafka does).
	closeAfter bool
	// tlsPrincipal is "User:<mapped subject>" of the client certificate on
	// an SSL listener (tlsprincipal.go); empty without one.
	tlsPrincipal string
	// rack is the client.rack the connection's last Fetch named (v11+),
	// for the rack pick of diskless partitions' leaders (metadata.go).
	rack string
	// replicaLink: the connection carried agent replicaID's replica
	// fetches (replicalinks.go).
	replicaLink bool
	replicaID   int32
}

// serveConn reads a connection's requests one at a time and answers them in
// order. A Produce is pipelined: its batches are written before the next
// request is read, and its acks are awaited on a goroutine of its own, so
// a client's next Produce shares the fsync instead of queueing behind it.
// Any other request waits until the Produces before it are answered, which
// keeps Kafka's one-request-at-a-time order for everything else (a Fetch
// after a Produce on one connection sees its records).
func (s *Server) serveConn(c net.Conn, l Listener) {
	remote := c.RemoteAddr().String()
	state := &connState{listener: l}
	if !s.tlsAuthenticate(c, state) {
		c.Close()
		return
	}
	ctx, cancel := s.connContext()
	br := bufio.NewReaderSize(c, connBufferBytes)
	out := make(chan *answer, maxPipelined)
	written := make(chan struct{})
	go s.writeAnswers(c, bufio.NewWriterSize(c, connBufferBytes), out, written)
	var producing sync.WaitGroup
	defer func() {
		// Answers already owed are still sent; then everything stops.
		close(out)
		<-written
		cancel()
		c.Close()
		s.replicaConnClosed(state)
	}()
	// A panic here would be a bug in a handler or decoder; log it and drop the
	// connection instead of the agent.
	defer s.recoverConn(c, remote)
	// A handler's panic must not keep its request's bytes from the
	// request budget for good; release may be called twice.
	release := func() {}
	defer func() { release() }()
	var sizeBuf [4]byte
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if state.sasl.raw && state.sasl.phase == saslAuthenticate {
			// After SaslHandshake v0 a frame is a bare SASL token (sasl.go).
			a, ok := s.readRawToken(ctx, br, state, size, remote)
			if !ok {
				return
			}
			out <- a
			continue
		}
		if limit := s.frameLimit(state); size < 8 || size > limit {
			s.logger.Warn("closing connection: bad frame size", "client", remote, "size", size, "max", limit)
			return
		}
		frame, pooled, err := readFrame(br, int(size))
		if err != nil {
			return
		}
		// The frame's bytes come from the request budget before it is
		// decoded (requestbudget.go); until then the connection reads
		// nothing more.
		taken, err := s.requests.take(ctx, len(frame))
		if err != nil {
			if pooled {
				produceFrames.put(frame)
			}
			return
		}
		release = taken
		req, err := parseRequest(frame, s.cfg.MaxTopicsPerRequest)
		if err != nil {
			release()
			if pooled {
				produceFrames.put(frame)
			}
			s.logger.Warn("closing connection: request refused", "client", remote, "err", err)
			return
		}
		req.remote = remote
		req.conn = state
		if !state.admits(req.key) {
			if pooled {
				produceFrames.put(frame)
			}
			s.metrics.saslRefused()
			s.logger.Info("closing connection: request before SASL authentication", "client", remote, "api_key", req.key, "listener", l.Name)
			return
		}
		if s.sessionExpired(state, req.key, remote) {
			if pooled {
				produceFrames.put(frame)
			}
			return
		}
		start := time.Now()
		a := &answer{req: req, done: make(chan struct{}), release: release}
		if produce, ok := req.msg.(*kmsg.ProduceRequest); ok {
			call := s.startProduce(ctx, req, produce)
			// Metered as Kafka meters it: the request's size, and the time
			// to write its batches (not the wait for acks).
			throttle := s.requestThrottle(req, quota.ProducerByteRate, int(size), time.Since(start))
			// The batches are in the log; nothing refers to the frame.
			produce.Topics = nil
			release()
			if pooled {
				produceFrames.put(frame)
			}
			producing.Add(1)
			go func() {
				defer producing.Done()
				defer close(a.done)
				defer s.recoverConn(c, remote)
				a.resp = call.finish()
				setThrottle(a.resp, throttle)
				s.metrics.observe(req.key, start, nil)
			}()
			out <- a
			if !mute(ctx, throttle) {
				return
			}
			continue
		}
		producing.Wait()
		handling := time.Now()
		resp, err := s.dispatch(ctx, req)
		s.metrics.observe(req.key, start, err)
		if err != nil {
			release()
			s.logger.Warn("closing connection", "client", remote, "api_key", req.key, "api_version", req.version, "err", err)
			return
		}
		a.resp = resp
		throttle := s.answerThrottle(req, resp, time.Since(handling)-req.waited)
		close(a.done)
		out <- a
		if state.closeAfter || !mute(ctx, throttle) {
			return
		}
	}
}

// maxPipelined bounds a connection's requests read but not yet answered.
// Kafka's idempotent producers keep at most five Produces in flight.
const maxPipelined = 8

// answer is one request's place in its connection's answer order.
type answer struct {
	req  *request
	resp kmsg.Response // set before done closes; nil sends nothing (acks=0)
	done chan struct{}
	// release gives the request's bytes back to the request budget once
	// its answer is written or dropped; nil for an answer that holds none.
	release func()
	// bare is a SASL token answered without a response header, after
	// SaslHandshake v0 (sasl.go); req and resp are nil.
	bare []byte
}

// released gives a's bytes back to the request budget, if it holds any.
func (a *answer) released() {
	if a.release != nil {
		a.release()
	}
}

// writeAnswers writes answers in request order as each is ready, flushing
// whenever it would otherwise wait. A failed write closes the connection,
// which ends the reader; the rest of the queue is then only waited out.
func (s *Server) writeAnswers(c net.Conn, bw *bufio.Writer, out <-chan *answer, written chan<- struct{}) {
	defer close(written)
	broken := false
	fail := func() { broken = true; c.Close() }
	for a := range out {
		select {
		case <-a.done:
		default:
			if !broken && bw.Flush() != nil {
				fail()
			}
			<-a.done
		}
		if broken || (a.resp == nil && a.bare == nil) {
			a.released()
			continue
		}
		// A client that stops reading would otherwise hold this goroutine
		// and the answer's memory for as long as it keeps the connection:
		// taking an answer gets as long as sending a request does.
		c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
		err := writeAnswer(bw, a)
		a.released()
		if err != nil {
			fail()
			continue
		}
		if len(out) == 0 && bw.Flush() != nil {
			fail()
		}
	}
}

func (s *Server) recoverConn(c net.Conn, remote string) {
	if r := recover(); r != nil {
		s.logger.Error("kafka handler panic", "client", remote, "panic", r, "stack", string(debug.Stack()))
		c.Close()
	}
}

// connBufferBytes is the size of each of a connection's read and write
// buffers, held for as long as the connection is open, idle or not. They
// only gather small frames: a frame body or answer larger than the buffer
// goes straight between the socket and its own slice, so bigger buffers
// would not save copies, only cost memory per connection.
const connBufferBytes = 16 << 10

// frameChunkBytes is the most readFrameBody allocates before the bytes
// that fill it have arrived.
const frameChunkBytes = 64 << 10

// readFrameBody reads a frame body of size bytes. The size is the client's
// claim, so it is not allocated up front: the buffer starts at
// frameChunkBytes and doubles only once full, so a frame that claims 100 MiB
// and sends 10 bytes holds 64 KiB, and any frame at most twice the bytes it
// has actually sent.
func readFrameBody(r io.Reader, size int) ([]byte, error) {
	if size <= frameChunkBytes {
		buf := make([]byte, size)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf := make([]byte, 0, frameChunkBytes)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), size-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < size {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// parseRequest decodes frame; a request naming more than maxTopics
// topics (topiclimit.go) is refused before it is decoded.
func parseRequest(frame []byte, maxTopics int) (*request, error) {
	r := kbin.Reader{Src: frame}
	req := &request{key: r.Int16(), version: r.Int16(), correlationID: r.Int32()}
	req.clientID = r.NullableString()
	if !r.Ok() {
		return nil, fmt.Errorf("%w: short header", errBadRequest)
	}
	msg := requestForKey(req.key)
	if msg == nil {
		return nil, fmt.Errorf("%w: unknown api key %d", errBadRequest, req.key)
	}
	req.msg = msg
	if !supported(req.key, req.version) {
		// The body may be of a version we cannot parse; the handler answers
		// UNSUPPORTED_VERSION (ApiVersions) or the connection closes.
		if req.key == 18 {
			msg.SetVersion(0)
			return req, nil
		}
		return nil, fmt.Errorf("%w: api key %d version %d not supported", errBadRequest, req.key, req.version)
	}
	msg.SetVersion(req.version)
	if msg.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: bad header", errBadRequest)
	}
	if err := checkTopicCount(req.key, msg.IsFlexible(), r.Src, maxTopics); err != nil {
		return nil, err
	}
	if err := msg.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%w: api key %d v%d: %v", errBadRequest, req.key, req.version, err)
	}
	return req, nil
}

func writeAnswer(w io.Writer, a *answer) error {
	if a.req == nil {
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], uint32(len(a.bare)))
		if _, err := w.Write(size[:]); err != nil {
			return err
		}
		_, err := w.Write(a.bare)
		return err
	}
	return writeResponse(w, a.req, a.resp)
}

func writeResponse(w io.Writer, req *request, resp kmsg.Response) error {
	resp.SetVersion(req.version)
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(req.correlationID))
	// ApiVersions always answers with header v0 so a client that sent a
	// version we do not know can still read the error.
	if resp.IsFlexible() && req.key != 18 {
		buf = append(buf, 0)
	}
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		if done, err := writeFetchSpliced(w, buf, req.version, f); done {
			return err
		}
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[:4], uint32(len(buf)-4))
	_, err := w.Write(buf)
	return err
}

// handlerFunc is the type-erased form of a handler.
type handlerFunc func(ctx context.Context, s *Server, req *request) (kmsg.Response, error)
