package agent

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestDefaultStoreIsAccepted: the default --store, built from the default
// --data-dir "data", which is relative, is a form objstore.Open accepts
// and roots where the data directory is.
func TestDefaultStoreIsAccepted(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := DefaultConfig()
	b, err := objstore.Open(t.Context(), cfg.storeURL())
	if err != nil {
		t.Fatalf("default store %q: %v", cfg.storeURL(), err)
	}
	defer b.Close()
	wd, _ := os.Getwd()
	if got := b.(*objstore.FSBucket).Root(); got != filepath.Join(wd, "data", "store") {
		t.Fatalf("default store rooted at %s", got)
	}
}

// TestAmbiguousStoreRefused: an agent given --store file://relative/path
// does not start, and says which setting is wrong and how to write it.
func TestAmbiguousStoreRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := testConfig("data")
	cfg.Store = "file://data/store"
	a, err := New(t.Context(), cfg, Options{Logger: quiet})
	if err == nil {
		a.Close()
		t.Fatal("an agent started on file://data/store")
	}
	for _, want := range []string{"--store", "file:///absolute/path", "file://./relative/path"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// TestStatusPageHidesClusterAndStore: the unauthenticated status page
// lists partitions but not the cluster id or the store URL.
func TestStatusPageHidesClusterAndStore(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), store), nil)
	createTopic(t, a.client(t), "shown", 1, nil)
	resp, err := http.Get("http://" + a.HTTPAddr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if !strings.Contains(page, "shown-0") {
		t.Fatalf("status page lists no partition:\n%s", page)
	}
	for _, secret := range []string{a.clusterID, filepath.Join(dir, "bucket"), "cluster"} {
		if strings.Contains(page, secret) {
			t.Fatalf("status page shows %q:\n%s", secret, page)
		}
	}
}

// TestDrainRefusesCrossOrigin: requests a web page elsewhere could make a
// browser send (no body, a text/plain body, a foreign Origin) are refused
// and the agent keeps serving; the JSON request from its own origin drains.
func TestDrainRefusesCrossOrigin(t *testing.T) {
	dir := t.TempDir()
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket")), nil)
	target := "http://" + a.HTTPAddr().String() + "/v1/drain?force=true&timeout=1s"
	for _, tc := range []struct {
		name, contentType, origin, body string
		want                            int
	}{
		{"no body", "", "", "", http.StatusUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", "", "force=true", http.StatusUnsupportedMediaType},
		{"text/plain", "text/plain", "http://evil.example", `{"force":true}`, http.StatusForbidden},
		{"text/plain, no Origin", "text/plain", "", `{"force":true}`, http.StatusUnsupportedMediaType},
		{"JSON, foreign Origin", "application/json", "http://evil.example", `{"force":true}`, http.StatusForbidden},
		{"JSON, not an object", "application/json", "", `true`, http.StatusBadRequest},
		{"JSON, unknown field", "application/json", "", `{"forse":true}`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(tc.body))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.want)
		}
		if status, out := drainRequest(t, a, http.MethodGet, ""); status != http.StatusOK || out["draining"] != false || !a.ready.Load() {
			t.Fatalf("%s: the agent drains: %d %v", tc.name, status, out)
		}
	}
	// Its own origin, as the console page would send it, is admitted.
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(`{"force":true}`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Origin", "http://"+a.HTTPAddr().String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("same-origin JSON drain: %s", resp.Status)
	}
	select {
	case <-a.done:
		a.cancel = nil
	case <-time.After(time.Minute):
		t.Fatal("a forced drain did not stop the agent")
	}
}

// TestHTTPIdleTimeout: a keep-alive HTTP connection left idle is closed
// after --http-idle-timeout.
func TestHTTPIdleTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	cfg.HTTPIdleTimeout = 200 * time.Millisecond
	a := start(t, cfg, nil)
	conn, err := net.Dial("tcp", a.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	idleFrom := time.Now()
	// The server closes the connection: the read ends with EOF well before
	// the deadline, which is only there so a broken timeout fails the test.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v, want EOF from the server closing it", err)
	}
	if idle := time.Since(idleFrom); idle > 10*time.Second {
		t.Fatalf("closed after %v", idle)
	}
}

func TestHTTPAuthConfigRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"client auth without TLS", func(c *Config) { c.HTTPTLSClientAuth = "requested" }, "--http-tls-client-auth requested needs --http-tls"},
		{"unknown client auth", func(c *Config) { c.HTTPTLSClientAuth = "sometimes" }, `--http-tls-client-auth "sometimes"`},
		{"unknown group", func(c *Config) { c.HTTPTokenFile = "t"; c.HTTPRequireAuthFor = []string{"console"} }, `--http-require-auth-for "console"`},
		{"nothing to authenticate with", func(c *Config) { c.HTTPRequireAuthFor = []string{"metrics"} }, "the HTTP port takes no credentials"},
	} {
		cfg := testConfig(t.TempDir())
		c.tweak(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
