package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// StoreProxy is an HTTP proxy on 127.0.0.1 in front of an S3 server
// (MinIO). The agents use it as their S3 endpoint; while a StoreFault is
// set it answers some requests with 503 SlowDown, resets some connections
// (before or after the server acted on the request), delays requests,
// answers 500 InternalError, and cuts PUTs off half-way through their body.
// Requests are forwarded with their Host header unchanged: they are signed
// for the proxy's address, and MinIO checks the signature against the Host
// it receives.
//
// Which request meets which fault comes from a source seeded by the run's
// seed, but the order in which requests arrive is the agents', so only
// the rates, not the exact requests hit, repeat from one run to the next.
//
// Its methods are safe for concurrent use.
type StoreProxy struct {
	target *url.URL
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy

	mu    sync.Mutex // guards fault and rng
	fault StoreFault
	rng   *rand.Rand

	stats proxyCounters
}

type proxyCounters struct {
	requests, slowDowns, resetsBefore, resetsAfter, delayed, serverErrors, halfPuts atomic.Int64
}

// ProxyStats counts what the proxy did.
type ProxyStats struct {
	Requests     int64 `json:"requests"`
	SlowDowns    int64 `json:"slow_downs"`
	ResetsBefore int64 `json:"resets_before_forwarding"`
	ResetsAfter  int64 `json:"resets_after_forwarding"`
	Delayed      int64 `json:"delayed"`
	ServerErrors int64 `json:"server_errors,omitempty"`
	HalfPuts     int64 `json:"half_puts,omitempty"`
}

// StartStoreProxy listens on a free port of host (127.0.0.1 when empty) and forwards to target
// (http://host:port). Close stops it.
func StartStoreProxy(host, target string, seed uint64) (*StoreProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("chaos: store proxy target %q: %w", target, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("chaos: store proxy: %w", err)
	}
	p := &StoreProxy{target: u, ln: ln, rng: rand.New(rand.NewPCG(seed, 0x970c))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The server itself failed (stopped, or the request was
			// cancelled): the client sees a gateway error it retries.
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln) // ends with ErrServerClosed on Close
	return p, nil
}

// Endpoint is the proxy's URL, for the agents' endpoint= parameter.
func (p *StoreProxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Set makes the proxy apply f to every later request; the zero StoreFault
// heals.
func (p *StoreProxy) Set(f StoreFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// Stats returns the counts so far.
func (p *StoreProxy) Stats() ProxyStats {
	return ProxyStats{
		Requests: p.stats.requests.Load(), SlowDowns: p.stats.slowDowns.Load(),
		ResetsBefore: p.stats.resetsBefore.Load(), ResetsAfter: p.stats.resetsAfter.Load(),
		Delayed: p.stats.delayed.Load(), ServerErrors: p.stats.serverErrors.Load(), HalfPuts: p.stats.halfPuts.Load(),
	}
}

// Close stops listening and closes every connection. It may be called twice.
func (p *StoreProxy) Close() error {
	err := p.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// action is what the proxy does to one request.
type action struct {
	delay       time.Duration
	slowDown    bool
	resetBefore bool
	resetAfter  bool
	serverError bool
	halfPut     bool
}

func (p *StoreProxy) decide() action {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	var a action
	if f.MaxLatency > 0 {
		a.delay = f.MinLatency
		if span := f.MaxLatency - f.MinLatency; span > 0 {
			a.delay += time.Duration(p.rng.Int64N(int64(span)))
		}
	}
	switch x := p.rng.Float64(); {
	case x < f.SlowDown:
		a.slowDown = true
	case x < f.SlowDown+f.Reset/2:
		a.resetBefore = true
	case x < f.SlowDown+f.Reset:
		a.resetAfter = true
	case x < f.SlowDown+f.Reset+f.ServerError:
		a.serverError = true
	}
	// Drawn apart: it applies to PUTs only, which serve decides.
	a.halfPut = p.rng.Float64() < f.HalfPut
	return a
}

func (p *StoreProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.stats.requests.Add(1)
	a := p.decide()
	if a.delay > 0 {
		p.stats.delayed.Add(1)
		t := time.NewTimer(a.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch {
	case a.slowDown:
		p.stats.slowDowns.Add(1)
		// Read the body first, as S3 does, so the client sees the answer
		// rather than a connection closed under its upload.
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.Method != http.MethodHead {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
				`<Error><Code>SlowDown</Code><Message>Please reduce your request rate (injected by the chaos proxy).</Message><RequestId>chaos</RequestId></Error>`)
		}
	case a.resetBefore:
		p.stats.resetsBefore.Add(1)
		reset(w)
	case a.serverError:
		p.stats.serverErrors.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		if r.Method != http.MethodHead {
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
				`<Error><Code>InternalError</Code><Message>We encountered an internal error, please try again (injected by the chaos proxy).</Message><RequestId>chaos</RequestId></Error>`)
		}
	case a.halfPut && r.Method == http.MethodPut && r.ContentLength > 1:
		p.stats.halfPuts.Add(1)
		// The store gets the headers and half the body, then the
		// connection breaks: it must not keep a partial object, and the
		// client, reset, must not take the PUT for done.
		r.Body = &halfBody{r: r.Body, left: r.ContentLength / 2}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
		p.rp.ServeHTTP(discardWriter{header: http.Header{}}, r.WithContext(ctx))
		cancel()
		reset(w)
	case a.resetAfter:
		p.stats.resetsAfter.Add(1)
		// The server acts on the request (a PUT lands, a CAS wins); only
		// the answer is lost.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
		p.rp.ServeHTTP(discardWriter{header: http.Header{}}, r.WithContext(ctx))
		cancel()
		reset(w)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// halfBody gives the first left bytes of r, then fails as a dropped
// connection would.
type halfBody struct {
	r    io.ReadCloser
	left int64
}

func (h *halfBody) Read(b []byte) (int, error) {
	if h.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := h.r.Read(b[:min(int64(len(b)), h.left)])
	h.left -= int64(n)
	return n, err
}

func (h *halfBody) Close() error { return h.r.Close() }

// discardWriter takes a response nobody will read.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
