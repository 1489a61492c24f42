package httpconns

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-streaming/strata/internal/testwait"
)

// serve starts an HTTP server on a Listener of max connections; /block
// answers only once release is closed.
func serve(t *testing.T, max int, release chan struct{}) (*Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(ln, max, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) { <-release })
	srv := &http.Server{Handler: mux, ConnState: l.ConnState, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return l, ln.Addr().String()
}

// keepAlive opens a connection and sends GET path on it; for /ok it reads
// the answer, which leaves the connection idle.
func keepAlive(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if path == "/ok" {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return c
}

// closedByServer reports whether the server has closed c: a read ends in
// EOF (or a reset) rather than a timeout.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestIdleConnectionMakesRoom: with the limit reached by idle keep-alive
// connections, a new connection is served and the longest idle one is
// closed.
func TestIdleConnectionMakesRoom(t *testing.T) {
	l, addr := serve(t, 2, make(chan struct{}))
	oldest := keepAlive(t, addr, "/ok")
	testwait.Until(t, 5*time.Second, func() bool { return l.idleCount() == 1 }, "first connection never idle")
	newer := keepAlive(t, addr, "/ok")
	testwait.Until(t, 5*time.Second, func() bool { return l.idleCount() == 2 }, "second connection never idle")

	keepAlive(t, addr, "/ok") // must be answered
	if !closedByServer(oldest) {
		t.Error("the longest idle connection is still open")
	}
	if got := testutil.ToFloat64(l.evicted); got != 1 {
		t.Errorf("evicted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(l.refused); got != 0 {
		t.Errorf("refused = %v, want 0", got)
	}
	// The newer one still works.
	if _, err := io.WriteString(newer, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	newer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := http.ReadResponse(bufio.NewReader(newer), nil); err != nil {
		t.Errorf("the newer idle connection: %v", err)
	}
}

// TestBusyConnectionsRefuseNewOnes: with the limit reached by connections
// in the middle of a request, a new connection is closed at once and
// counted, and one is admitted again once a request ends and its
// connection closes.
func TestBusyConnectionsRefuseNewOnes(t *testing.T) {
	release := make(chan struct{})
	l, addr := serve(t, 1, release)
	busy := keepAlive(t, addr, "/block")
	testwait.Until(t, 5*time.Second, func() bool { return l.openCount() == 1 }, "first connection not counted")

	refused := keepAlive(t, addr, "/block")
	if !closedByServer(refused) {
		t.Fatal("a connection over the limit was not closed")
	}
	if got := testutil.ToFloat64(l.refused); got != 1 {
		t.Errorf("refused = %v, want 1", got)
	}
	close(release)
	busy.Close()
	testwait.Until(t, 5*time.Second, func() bool { return l.openCount() == 0 }, "closed connection still counted")
	keepAlive(t, addr, "/ok")
}

func (l *Listener) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

func (l *Listener) openCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
