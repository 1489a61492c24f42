package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
)

func TestReadFrameBody(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320,000 bytes: several doublings
	for _, tc := range []struct {
		name    string
		size    int
		sent    int
		wantErr error
	}{
		{"small", 100, 100, nil},
		{"chunk", frameChunkBytes, frameChunkBytes, nil},
		{"large", len(body), len(body), nil},
		{"small truncated", 100, 10, io.ErrUnexpectedEOF},
		{"large truncated", 100 << 20, 10, io.ErrUnexpectedEOF},
		{"large truncated late", len(body), len(body) - 1, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read at most, as a slow client would send.
			r := iotest.OneByteReader(bytes.NewReader(body[:tc.sent]))
			if tc.sent > 1000 {
				r = iotest.HalfReader(bytes.NewReader(body[:tc.sent]))
			}
			got, err := readFrameBody(r, tc.size)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(got, body[:tc.size]) {
				t.Fatalf("got %d bytes, not the %d sent", len(got), tc.size)
			}
		})
	}
}

// TestMaxConnections: past MaxConnections a new connection is closed at
// once and counted; once one closes, a new one is served again.
func TestMaxConnections(t *testing.T) {
	ln := listen(t)
	cfg := DefaultConfig()
	cfg.MaxConnections = 2
	srv := New(cfg, Backends{}, nil, NewMetrics(prometheus.NewRegistry()))
	serve(t, srv, ln)
	// apiVersions sends ApiVersions v0 on c and reports whether it was answered.
	apiVersions := func(c net.Conn) bool {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(kafkawire.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1, "")); err != nil {
			return false
		}
		_, err := kafkawire.ReadFrame(c, 1<<20)
		return err == nil
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first, second := dial(), dial()
	if !apiVersions(first) || !apiVersions(second) {
		t.Fatal("connections within the limit were not served")
	}
	if apiVersions(dial()) {
		t.Fatal("a third connection was served with max connections 2")
	}
	if got := testutil.ToFloat64(srv.metrics.refusals.WithLabelValues(refusedTotal)); got != 1 {
		t.Fatalf("refused connections counted %v, want 1", got)
	}
	first.Close()
	testwait.Until(t, 5*time.Second, func() bool { return testutil.ToFloat64(srv.metrics.conns) == 1 },
		"the closed connection released")
	if !apiVersions(dial()) {
		t.Fatal("no connection served after one closed")
	}
}

// TestProduceFramesAreRecycled: a large Produce frame is read into a pooled
// buffer, which comes back for the next one; other frames are not pooled,
// and the pool never holds more than pooledFrames buffers.
func TestProduceFramesAreRecycled(t *testing.T) {
	frame := func(key int16, size int) *bufio.Reader {
		b := make([]byte, size)
		binary.BigEndian.PutUint16(b, uint16(key))
		return bufio.NewReader(bytes.NewReader(b))
	}
	first, pooled, err := readFrame(frame(produceKey, 100<<10), 100<<10)
	if err != nil || !pooled || len(first) != 100<<10 {
		t.Fatalf("Produce frame: pooled %v, %d bytes, %v", pooled, len(first), err)
	}
	produceFrames.put(first)
	again, pooled, err := readFrame(frame(produceKey, 200<<10), 200<<10)
	if err != nil || !pooled || &again[0] != &first[0] {
		t.Fatalf("the next Produce frame did not reuse the buffer given back (pooled %v, %v)", pooled, err)
	}
	produceFrames.put(again)
	if _, pooled, _ := readFrame(frame(1, 100<<10), 100<<10); pooled {
		t.Fatal("a Fetch frame was read into the Produce pool")
	}
	if _, pooled, _ := readFrame(frame(produceKey, 2<<20), 2<<20); pooled {
		t.Fatal("a frame above pooledFrameBytes was pooled")
	}

	var p framePool
	p.free = make(chan []byte, pooledFrames)
	for i := range pooledFrames {
		if p.get(1<<10) == nil {
			t.Fatalf("buffer %d refused below the bound", i)
		}
	}
	if p.get(1<<10) != nil {
		t.Fatalf("a buffer past the bound of %d was handed out", pooledFrames)
	}
}

// listen opens a loopback listener for a test server.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve runs srv on ln until the test ends, then checks that Serve
// returned cleanly.
func serve(t *testing.T, srv *Server, ln net.Listener) {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}
