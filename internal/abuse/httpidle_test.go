package abuse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testagent"
)

const (
	// idleHTTPConns is how many keep-alive connections the probe opens
	// and leaves idle; before --http-max-connections, 2,030 took every
	// descriptor of an agent limited to httpProbeFileLimit.
	idleHTTPConns      = 2000
	httpProbeFileLimit = 2048
	// httpProbeMaxConns is the agent's --http-max-connections in the probe
	// (the default, written out so that the bound below reads from it).
	httpProbeMaxConns = 512
	// httpProbeIdleTimeout is short so that the probe sees the idle
	// connections closed within its time.
	httpProbeIdleTimeout = 5 * time.Second
)

// TestIdleHTTPKeepAlives opens idleHTTPConns keep-alive connections to
// the HTTP port of an agent limited to httpProbeFileLimit open files, makes
// one request on each and holds them all. Meanwhile the agent must keep
// acknowledging and serving the good clients' records and answer /healthz
// on a new connection; it may hold at most --http-max-connections of them
// (so its open files stay well under the limit), and every one it holds
// must be closed after --http-idle-timeout.
func TestIdleHTTPKeepAlives(t *testing.T) {
	raiseOpenFileLimit(t) // the test holds idleHTTPConns sockets
	a := testagent.Start(t, testagent.Options{OpenFileLimit: httpProbeFileLimit, ExtraArgs: []string{
		"--http-max-connections", fmt.Sprint(httpProbeMaxConns),
		"--http-idle-timeout", httpProbeIdleTimeout.String()}})
	pid := a.PID()
	if lim, err := openFileLimit(pid); err != nil || lim != httpProbeFileLimit {
		t.Fatalf("agent open-file limit %d (%v), want %d", lim, err, httpProbeFileLimit)
	}
	w := startWorkload(t, a.Addr(), "http-idle-good", 1, nil, 100, goodRate)
	if !waitFor(60*time.Second, func() bool { return w.ackedN.Load() >= minProgress && w.readN.Load() >= minProgress }) {
		t.Fatalf("good clients made no progress before the probe: %d acknowledged, %d read", w.ackedN.Load(), w.readN.Load())
	}
	base := mustSample(t, pid, a.HTTPAddr())
	t.Logf("baseline: %v", base)

	conns, sent, answered := openIdleHTTP(t, a.HTTPAddr(), idleHTTPConns)
	acked0, read0 := w.ackedN.Load(), w.readN.Load()
	progressed := waitFor(60*time.Second, func() bool {
		return w.ackedN.Load() >= acked0+minProgress && w.readN.Load() >= read0+minProgress
	})
	healthz := getHealthz(a.HTTPAddr())
	during := mustSample(t, pid, a.HTTPAddr())
	open := httpConnsOpen(t, a.HTTPAddr())
	t.Logf("%d idle keep-alives held (%d bytes sent, %d answered): acked=%d read=%d, /healthz on a new connection: %v, HTTP connections open %v; agent: %v",
		len(conns), sent, answered, w.ackedN.Load()-acked0, w.readN.Load()-read0, errOrOK(healthz), open, during)
	if !progressed {
		t.Errorf("good clients acknowledged %d and read %d records in 60s while the connections were held, want %d each",
			w.ackedN.Load()-acked0, w.readN.Load()-read0, minProgress)
	}
	if healthz != nil {
		t.Errorf("/healthz while %d idle keep-alives are held: %v", len(conns), healthz)
	}
	// The agent holds at most --http-max-connections of them, so its
	// descriptors stay near its baseline plus that many.
	if during.fds > base.fds+httpProbeMaxConns+settleSlack {
		t.Errorf("agent holds %d open files with %d idle HTTP connections offered, want at most %d (baseline %d + --http-max-connections %d + %d)",
			during.fds, len(conns), base.fds+httpProbeMaxConns+settleSlack, base.fds, httpProbeMaxConns, settleSlack)
	}

	// Every connection still open goes after the idle timeout; the wait is
	// bounded, nothing here is timed.
	var after sample
	settled := waitFor(httpProbeIdleTimeout+30*time.Second, func() bool {
		s, err := takeSample(pid, a.HTTPAddr())
		after = s
		return err == nil && s.fds <= base.fds+settleSlack
	})
	t.Logf("after the idle timeout: %v", after)
	if !settled {
		t.Errorf("agent still holds %d open files %v after --http-idle-timeout %v, baseline %d", after.fds, httpProbeIdleTimeout+30*time.Second, httpProbeIdleTimeout, base.fds)
	}
	for _, c := range conns {
		c.Close()
	}
	// Still serving: the good clients go on producing and consuming.
	acked0, read0 = w.ackedN.Load(), w.readN.Load()
	serving := waitFor(60*time.Second, func() bool {
		return w.ackedN.Load() >= acked0+minProgress && w.readN.Load() >= read0+minProgress
	})
	if !serving {
		t.Errorf("after the probe the good clients acknowledged %d and read %d records in 60s, want %d each",
			w.ackedN.Load()-acked0, w.readN.Load()-read0, minProgress)
	}
	w.finish(t)
	t.Logf("probe %q: %d bytes sent, peak RSS %s (bound %s), still serves produce and consume: %v",
		"2,000 idle HTTP keep-alives", sent, mib(after.hwm), mib(maxRSS), serving)
	if after.hwm > maxRSS {
		t.Errorf("agent peak RSS %s above the %s bound", mib(after.hwm), mib(maxRSS))
	}
}

// openIdleHTTP opens n connections to addr, 32 at a time, sends one
// GET /healthz on each and reads the answer, which leaves the connection
// idle on the agent's side; an agent that closes one instead (it held its
// limit and none was idle) counts as unanswered. It returns the
// connections, the bytes sent and how many were answered.
func openIdleHTTP(t *testing.T, addr string, n int) (conns []net.Conn, sent int64, answered int64) {
	t.Helper()
	req := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		next     atomic.Int64
		ok, sn   atomic.Int64
		firstErr error
	)
	for range 32 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				m, err := io.WriteString(c, req)
				sn.Add(int64(m))
				if err != nil {
					continue
				}
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("open idle HTTP connections: %v", firstErr)
	}
	return conns, sn.Load(), ok.Load()
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// getHealthz GETs /healthz on a new connection.
func getHealthz(addr string) error {
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// httpConnsOpen reads strata_http_connections_open.
func httpConnsOpen(t *testing.T, addr string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+addr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Value("strata_http_connections_open")
	return v
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}
