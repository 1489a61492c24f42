package agent

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// httpDo sends method to path on agent a with token as its bearer token
// ("" for none) and returns the status code.
func httpDo(t *testing.T, a *running, method, path, token string) int {
	t.Helper()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"force":true}`)
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, "http://"+a.HTTPAddr().String()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPTokenRequired: with --http-token-file, a drain without a token,
// or with a wrong one, gets 401 and leaves the agent serving; profiles
// need the token too; probes, metrics and read-only pages stay open; and
// the file's second token drains the agent.
func TestHTTPTokenRequired(t *testing.T) {
	dir := t.TempDir()
	const first, second = "aW50ZXJuYWwtdG9rZW4tb25lLTEyMzQ1", "b3BlcmF0b3ItdG9rZW4tdHdvLTY3ODkw"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# agents first, operators second\n"+first+"\n"+second+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	cfg.HTTPTokenFile, cfg.HTTPPprof = tokens, true
	a := start(t, cfg, nil)

	drain := "/v1/drain?force=true&timeout=1s"
	for _, token := range []string{"", "wrong-token-but-long-enough-to-pass", first + "x"} {
		if got := httpDo(t, a, http.MethodPost, drain, token); got != http.StatusUnauthorized {
			t.Errorf("drain with token %q: %d, want 401", token, got)
		}
		if status, out := drainRequest(t, a, http.MethodGet, ""); status != http.StatusOK || out["draining"] != false || !a.ready.Load() {
			t.Fatalf("token %q: the agent drains: %d %v", token, status, out)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/": 200, "/v1/drain": 200, "/debug/pprof/": 401} {
		if got := httpDo(t, a, http.MethodGet, path, ""); got != want {
			t.Errorf("GET %s without a token: %d, want %d", path, got, want)
		}
	}
	if got := httpDo(t, a, http.MethodGet, "/debug/pprof/", first); got != http.StatusOK {
		t.Errorf("GET /debug/pprof/ with the token: %d", got)
	}
	if got := httpDo(t, a, http.MethodPost, drain, second); got != http.StatusOK {
		t.Fatalf("drain with the second token: %d", got)
	}
	select {
	case <-a.done:
		a.cancel = nil
	case <-time.After(time.Minute):
		t.Fatal("an authorized forced drain did not stop the agent")
	}
}

// TestHTTPPprofOffByDefault: without --http-pprof there are no profiles.
func TestHTTPPprofOffByDefault(t *testing.T) {
	dir := t.TempDir()
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket")), nil)
	if got := httpDo(t, a, http.MethodGet, "/debug/pprof/", ""); got != http.StatusNotFound {
		t.Fatalf("GET /debug/pprof/: %d, want 404", got)
	}
}

// TestHTTPTokenFileRefused: a token file with a short token, or none,
// stops the agent at start with a message naming the flag.
func TestHTTPTokenFileRefused(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"short": "secret\n", "empty": "# nothing\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(filepath.Join(dir, name+"-data"))
		cfg.HTTPTokenFile = p
		_, err := New(context.Background(), cfg, Options{Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "--http-token-file") {
			t.Errorf("%s: %v, want an error naming --http-token-file", name, err)
		}
	}
}
