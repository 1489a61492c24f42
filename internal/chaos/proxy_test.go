package chaos

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// backend is a stand-in for MinIO that counts the requests reaching it
// and echoes the Host header it saw.
func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "host="+r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func startProxy(t *testing.T, target string) *StoreProxy {
	p, err := StartStoreProxy("", target, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// client does not retry and does not reuse connections, so each request
// meets the proxy's fault on its own.
func client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func put(t *testing.T, p *StoreProxy) (*http.Response, string, error) {
	req, _ := http.NewRequest(http.MethodPut, p.Endpoint()+"/bucket/key", bytes.NewReader([]byte("body")))
	resp, err := client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

func TestStoreProxyPassesThroughWithHost(t *testing.T) {
	srv, n := backend(t)
	p := startProxy(t, srv.URL)
	resp, body, err := put(t, p)
	if err != nil {
		t.Fatal(err)
	}
	// The request was signed for the proxy's host; the server must see it.
	if resp.StatusCode != 200 || body != "host="+strings.TrimPrefix(p.Endpoint(), "http://") || n.Load() != 1 {
		t.Fatalf("status %d body %q, %d requests at the server", resp.StatusCode, body, n.Load())
	}
}

func TestStoreProxySlowDown(t *testing.T) {
	srv, n := backend(t)
	p := startProxy(t, srv.URL)
	p.Set(StoreFault{SlowDown: 1})
	resp, body, err := put(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "<Code>SlowDown</Code>") || n.Load() != 0 {
		t.Fatalf("status %d body %q, %d requests at the server; want 503 SlowDown and none", resp.StatusCode, body, n.Load())
	}
	p.Set(StoreFault{})
	if resp, _, err := put(t, p); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after healing: %v, %v", resp, err)
	}
	if s := p.Stats(); s.Requests != 2 || s.SlowDowns != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestStoreProxyResets(t *testing.T) {
	srv, n := backend(t)
	p := startProxy(t, srv.URL)
	p.Set(StoreFault{Reset: 1})
	const tries = 40
	for range tries {
		if _, _, err := put(t, p); err == nil {
			t.Fatal("a request through a resetting proxy succeeded")
		}
	}
	s := p.Stats()
	// Half the resets come before the server sees the request, half
	// after it acted on it.
	if s.ResetsBefore+s.ResetsAfter != tries || s.ResetsBefore == 0 || s.ResetsAfter == 0 || n.Load() != s.ResetsAfter {
		t.Fatalf("stats %+v, %d requests at the server", s, n.Load())
	}
}

func TestStoreProxyLatency(t *testing.T) {
	srv, _ := backend(t)
	p := startProxy(t, srv.URL)
	p.Set(StoreFault{MinLatency: 100 * time.Millisecond, MaxLatency: 150 * time.Millisecond})
	start := time.Now()
	if resp, _, err := put(t, p); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v, %v", resp, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("request took %v through a proxy adding at least 100ms", d)
	}
	if s := p.Stats(); s.Delayed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestStoreProxyServerError(t *testing.T) {
	srv, n := backend(t)
	p := startProxy(t, srv.URL)
	p.Set(StoreFault{ServerError: 1})
	resp, body, err := put(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "<Code>InternalError</Code>") || n.Load() != 0 {
		t.Fatalf("status %d body %q, %d requests at the server; want 500 InternalError and none", resp.StatusCode, body, n.Load())
	}
	if s := p.Stats(); s.ServerErrors != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A PUT cut half-way: the server gets half the declared body and a broken
// connection, never a complete request; the client gets a reset. Other
// methods pass.
func TestStoreProxyHalfPut(t *testing.T) {
	var complete, partial atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || int64(len(b)) != r.ContentLength {
			partial.Add(1)
			return
		}
		complete.Add(1)
	}))
	t.Cleanup(srv.Close)
	p := startProxy(t, srv.URL)
	p.Set(StoreFault{HalfPut: 1})
	body := bytes.Repeat([]byte("x"), 64<<10)
	req, _ := http.NewRequest(http.MethodPut, p.Endpoint()+"/bucket/key", bytes.NewReader(body))
	if resp, err := client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a PUT cut half-way answered %s", resp.Status)
	}
	get, _ := http.NewRequest(http.MethodGet, p.Endpoint()+"/bucket/key", nil)
	resp, err := client().Do(get)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a GET through the half-PUT proxy: %v, %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for partial.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if partial.Load() != 1 || complete.Load() != 1 || p.Stats().HalfPuts != 1 {
		t.Fatalf("server saw %d partial and %d complete requests (want the PUT partial, the GET complete); stats %+v", partial.Load(), complete.Load(), p.Stats())
	}
}
