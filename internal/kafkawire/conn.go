// Package kafkawire is a minimal client side of the Kafka wire protocol, for
// code that must choose its own request versions, hold its own connection,
// or send bytes a full client would not: the follower's connection to its
// leader, the benchmark's idle connections, and tests that probe the
// agent's request handling.
//
// Requests are encoded and responses decoded by kmsg; this package only
// frames them. A request frame is
//
//	size int32 | api key int16 | api version int16 | correlation id int32 |
//	client id (nullable string) | [tagged fields, flexible versions only] |
//	body
//
// and a response frame is
//
//	size int32 | correlation id int32 |
//	[tagged fields, flexible versions except ApiVersions] | body
//
// where size counts the bytes after itself. ApiVersions answers with the
// v0 header at every version, so that a client that does not yet know the
// broker's versions can read it.
//
// A Conn is used by one goroutine at a time, except Close, which any
// goroutine may call to interrupt the one using it. Any failure while a request
// or response is half written or half read (an I/O error, a bad frame, a
// context that ends) closes the connection, since the stream can no longer
// be trusted: every later call returns ErrClosed, and the caller dials
// again.
package kafkawire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrClosed is returned by calls on a Conn that was closed, by Close or by
// an earlier failure.
var ErrClosed = errors.New("kafkawire: connection closed")

// ErrNoRequest is returned by Receive when no request awaits a response.
var ErrNoRequest = errors.New("kafkawire: no request awaits a response")

// Config is what a Conn says and accepts.
type Config struct {
	// ClientID is sent in every request header; empty sends a null id.
	ClientID string
	// MaxResponseBytes bounds a response frame (after its size prefix);
	// a larger frame closes the connection before anything is allocated.
	MaxResponseBytes int32
	// ReadBufferBytes is the size of the connection's read buffer. Large
	// responses are read past it, so it only needs to fit small ones;
	// keep it small where thousands of connections are open.
	ReadBufferBytes int
}

// DefaultConfig returns the defaults: 64 MiB responses, a 4 KiB buffer.
func DefaultConfig() Config {
	return Config{MaxResponseBytes: 64 << 20, ReadBufferBytes: 4 << 10}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.MaxResponseBytes < 4:
		return fmt.Errorf("kafkawire: MaxResponseBytes %d: want at least 4", c.MaxResponseBytes)
	case c.ReadBufferBytes < 16:
		return fmt.Errorf("kafkawire: ReadBufferBytes %d: want at least 16", c.ReadBufferBytes)
	}
	return nil
}

// Conn is one Kafka connection. Requests may be pipelined: Send writes a
// request, Receive reads the response to the oldest one not yet received.
type Conn struct {
	nc      net.Conn
	rd      *bufio.Reader
	cfg     Config
	format  *kmsg.RequestFormatter
	corr    int32
	pending []pending // sent, not yet received, oldest first
	out     []byte    // reused request buffer
	closed  atomic.Bool
}

// pending is a request whose response has not been read.
type pending struct {
	corr int32
	req  kmsg.Request
}

// Dial connects to addr over TCP.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return NewConn(nc, cfg)
}

// NewConn speaks Kafka on nc, which the Conn then owns.
func NewConn(nc net.Conn, cfg Config) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Conn{nc: nc, rd: bufio.NewReaderSize(nc, cfg.ReadBufferBytes), cfg: cfg,
		format: formatter(cfg.ClientID)}, nil
}

func formatter(clientID string) *kmsg.RequestFormatter {
	if clientID == "" {
		return kmsg.NewRequestFormatter() // a null client id
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
}

// NetConn is the underlying connection, for tests that write raw bytes or
// watch it close. Bytes written there desynchronise the Conn.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the connection; it may be called twice, and from any
// goroutine: a call blocked on the connection returns an error.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.nc.Close()
}

// Do sends req at its set version and returns the response.
func (c *Conn) Do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp := req.ResponseKind()
	if err := c.DoInto(ctx, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// DoInto sends req at its set version and decodes the response into resp,
// which must be req's response kind.
func (c *Conn) DoInto(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if len(c.pending) != 0 {
		return fmt.Errorf("kafkawire: %d pipelined responses not yet received", len(c.pending))
	}
	if err := c.Send(ctx, req); err != nil {
		return err
	}
	return c.receiveInto(ctx, resp)
}

// Send writes req at its set version without waiting for its response.
func (c *Conn) Send(ctx context.Context, req kmsg.Request) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.corr++
	c.out = c.format.AppendRequest(c.out[:0], req, c.corr)
	err := c.io(ctx, func() error {
		_, err := c.nc.Write(c.out)
		return err
	})
	if err != nil {
		return err
	}
	c.pending = append(c.pending, pending{corr: c.corr, req: req})
	return nil
}

// Receive reads the response to the oldest request sent and not received.
func (c *Conn) Receive(ctx context.Context) (kmsg.Response, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if len(c.pending) == 0 {
		return nil, ErrNoRequest
	}
	resp := c.pending[0].req.ResponseKind()
	if err := c.receiveInto(ctx, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *Conn) receiveInto(ctx context.Context, resp kmsg.Response) error {
	// No check of closed here: a Close racing with this call must
	// interrupt the read, which it does by closing the connection.
	if len(c.pending) == 0 {
		return ErrNoRequest
	}
	p := c.pending[0]
	var body []byte
	err := c.io(ctx, func() error {
		var err error
		body, err = ReadFrame(c.rd, c.cfg.MaxResponseBytes)
		return err
	})
	if err != nil {
		return err
	}
	c.pending = c.pending[1:]
	if err := DecodeResponse(body, p.req, p.corr, resp); err != nil {
		c.Close()
		return err
	}
	return nil
}

// io runs one write or read under ctx: its deadline becomes the
// connection's, and its end interrupts the call. A failure closes the
// connection; if ctx ended, its error is returned, and ErrClosed if Close
// did.
func (c *Conn) io(ctx context.Context, f func() error) error {
	deadline, _ := ctx.Deadline() // zero: none
	err := c.nc.SetDeadline(deadline)
	if err == nil {
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		err = f()
		stop()
	}
	if err == nil {
		return nil
	}
	closed := c.closed.Load() // by Close, from another goroutine
	c.Close()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case closed:
		return ErrClosed
	}
	return err
}

// AppendRequest appends req, at its set version, as one request frame with
// correlation id corr, for tests that write frames themselves.
func AppendRequest(dst []byte, req kmsg.Request, corr int32, clientID string) []byte {
	return formatter(clientID).AppendRequest(dst, req, corr)
}

// ReadFrame reads one frame, size prefix first, and returns what follows
// the size. A size below 4 (a response holds at least its correlation id)
// or above max is an error, found before anything is allocated. The
// returned slice is new: decoded responses may keep pointers into it.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > max {
		return nil, fmt.Errorf("kafkawire: frame of %d bytes: want 4 to %d", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// DecodeResponse checks that frame (as ReadFrame returns it) answers
// correlation id corr, skips its header and decodes its body, as req's
// version, into resp.
func DecodeResponse(frame []byte, req kmsg.Request, corr int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return fmt.Errorf("kafkawire: response of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return fmt.Errorf("kafkawire: response to correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp.SetVersion(req.GetVersion())
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		b := kbin.Reader{Src: body}
		kmsg.SkipTags(&b)
		if !b.Ok() {
			return errors.New("kafkawire: response header: tagged fields run past the frame")
		}
		body = b.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("kafkawire: decode %T v%d: %w", resp, req.GetVersion(), err)
	}
	return nil
}
