package objstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// s3Proxy is an HTTP proxy on 127.0.0.1 in front of a MinIO server. It
// records every request it sees and answers the ones that match an armed
// fault with an S3 error instead of passing them on, as an overloaded or
// failing S3 would.
type s3Proxy struct {
	srv *httptest.Server

	mu       sync.Mutex
	faults   []*s3Fault
	requests []seenRequest
}

// s3Fault answers up to times requests that match with status and an S3
// error of the given code; status 0 drops the connection instead.
type s3Fault struct {
	match  func(*http.Request) bool
	times  int
	status int
	code   string
}

// seenRequest is what the proxy recorded of one request.
type seenRequest struct {
	method string
	query  url.Values
	header http.Header
	failed bool // answered by a fault
}

// newS3Proxy starts a proxy to target (http://host:port) for the test.
func newS3Proxy(t *testing.T, target string) *s3Proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Proxy{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		// The request is signed for the proxy's host; MinIO checks the
		// signature against the Host it receives.
		r.Out.Host = r.In.Host
	}}
	// httptest listens on 127.0.0.1 only.
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fault := p.record(r)
		if fault == nil {
			rp.ServeHTTP(w, r)
			return
		}
		if fault.status == 0 {
			// No answer at all: the connection drops, as when a refusal
			// races the request body and loses.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		// Read the body first, as S3 does, so the client sees the answer
		// rather than a connection closed under its upload.
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(fault.status)
		if r.Method != http.MethodHead {
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
				`<Error><Code>%s</Code><Message>injected by the test proxy</Message><RequestId>proxy</RequestId></Error>`, fault.code)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's endpoint.
func (p *s3Proxy) URL() string { return p.srv.URL }

// fail arms a fault: the next times requests that match are answered with
// status and code.
func (p *s3Proxy) fail(times, status int, code string, match func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &s3Fault{match: match, times: times, status: status, code: code})
}

func (p *s3Proxy) record(r *http.Request) *s3Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	var hit *s3Fault
	for _, f := range p.faults {
		if f.times > 0 && f.match(r) {
			f.times--
			hit = f
			break
		}
	}
	p.requests = append(p.requests, seenRequest{method: r.Method, query: r.URL.Query(), header: r.Header.Clone(), failed: hit != nil})
	return hit
}

// seen returns the requests recorded so far that match.
func (p *s3Proxy) seen(match func(seenRequest) bool) []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []seenRequest
	for _, r := range p.requests {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

func isPut(r *http.Request) bool { return r.Method == http.MethodPut }

func isPart(n string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == n }
}
